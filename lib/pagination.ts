import { MAX_PAGE, MAX_PAGE_SIZE } from './schemas/common';

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

/** The row offset of a page; the API schemas bound page and pageSize, so this only guards against callers that skipped them. */
export function offsetOf({ page, pageSize }: PageRequest): number {
  if (
    !Number.isInteger(page) ||
    page < 1 ||
    page > MAX_PAGE ||
    !Number.isInteger(pageSize) ||
    pageSize < 1 ||
    pageSize > MAX_PAGE_SIZE
  ) {
    throw new RangeError(
      `page must be an integer from 1 to ${MAX_PAGE} and pageSize from 1 to ${MAX_PAGE_SIZE}, got ${page} and ${pageSize}`,
    );
  }
  return (page - 1) * pageSize;
}
