import type { Renderable } from '../page';
import { usd } from '../format';

/** Money grouped one way (by kind, listing or event): a row per group with its count of charges and its amount. */
export function CountAndAmountTable(props: {
  id: string;
  caption: string;
  column: string;
  countColumn: string;
  amountColumn: string;
  rows: { label: Renderable | string; charges: number; usd: number }[];
}) {
  return (
    <table id={props.id}>
      <caption>{props.caption}</caption>
      <thead>
        <tr>
          <th scope="col">{props.column}</th>
          <th scope="col" class="num">
            {props.countColumn}
          </th>
          <th scope="col" class="num">
            {props.amountColumn}
          </th>
        </tr>
      </thead>
      <tbody>
        {props.rows.map((row) => (
          <tr>
            <th scope="row">{row.label}</th>
            <td class="num">{row.charges}</td>
            <td class="num">{usd(row.usd)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
