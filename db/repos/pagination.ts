export interface PageRequest {
  page: number;
  pageSize: number;
}

export interface PaginationMeta extends PageRequest {
  total: number;
  totalPages: number;
}

export function paginationMeta({ page, pageSize }: PageRequest, total: number): PaginationMeta {
  return { page, pageSize, total, totalPages: Math.ceil(total / pageSize) };
}

export function offsetOf({ page, pageSize }: PageRequest): number {
  return (page - 1) * pageSize;
}
