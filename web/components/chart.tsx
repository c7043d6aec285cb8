import { usd } from '../format';

/**
 * A bar chart of amounts per day drawn on the server as SVG (no script): one bar per day, a
 * title per bar (the browser's tooltip), a labelled top of the scale. Pages always put the same
 * numbers in a table beside it; the SVG is one image to assistive technology, named by its caption.
 */
export function DailyBarChart(props: { id: string; title: string; days: { day: string; usd: number }[] }) {
  const width = 720;
  const height = 220;
  const left = 84;
  const bottom = 28;
  const top = 12;
  const plotWidth = width - left - 8;
  const plotHeight = height - top - bottom;
  const max = Math.max(0, ...props.days.map((d) => d.usd));
  const slot = props.days.length ? plotWidth / props.days.length : plotWidth;
  const barWidth = Math.max(1, slot * 0.7);
  const total = props.days.reduce((sum, d) => sum + d.usd, 0);
  const description = `${props.days.length} days from ${props.days[0]?.day ?? '—'} to ${props.days.at(-1)?.day ?? '—'}; ${usd(Math.round(total * 1e6) / 1e6)} in all, at most ${usd(max)} on one day.`;
  const labelEvery = Math.max(1, Math.ceil(props.days.length / 6));
  return (
    <figure class="chart">
      <svg
        id={props.id}
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-labelledby={`${props.id}-title ${props.id}-desc`}
        class="chart-svg"
      >
        <title id={`${props.id}-title`}>{props.title}</title>
        <desc id={`${props.id}-desc`}>{description}</desc>
        <line x1={left} y1={top} x2={left} y2={top + plotHeight} class="axis" />
        <line x1={left} y1={top + plotHeight} x2={width - 8} y2={top + plotHeight} class="axis" />
        <text x={left - 6} y={top + 10} text-anchor="end" class="tick">
          {usd(max)}
        </text>
        <text x={left - 6} y={top + plotHeight} text-anchor="end" class="tick">
          $0
        </text>
        {props.days.map((d, i) => {
          const barHeight = max > 0 ? (d.usd / max) * plotHeight : 0;
          const x = left + i * slot + (slot - barWidth) / 2;
          return (
            <g>
              <rect
                x={x.toFixed(1)}
                y={(top + plotHeight - barHeight).toFixed(1)}
                width={barWidth.toFixed(1)}
                height={barHeight.toFixed(1)}
                class="bar"
              >
                <title>{`${d.day}: ${usd(d.usd)}`}</title>
              </rect>
              {i % labelEvery === 0 && (
                <text x={(left + i * slot + slot / 2).toFixed(1)} y={height - 8} text-anchor="middle" class="tick">
                  {d.day.slice(5)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption>{props.title} (the table beside has the same numbers)</figcaption>
    </figure>
  );
}

/**
 * A day-by-day amount as a picture with the same numbers in a table beside it: the chart (`chartId`),
 * and a table (`tableId`) captioned with the total.
 */
export function DailyChartWithTable(props: {
  chartId: string;
  tableId: string;
  title: string;
  caption: string;
  column: string;
  days: { day: string; usd: number }[];
}) {
  return (
    <div class="chart-with-table">
      <DailyBarChart id={props.chartId} title={props.title} days={props.days} />
      <div class="table-scroll" role="region" aria-labelledby={`${props.tableId}-caption`} tabindex={0}>
        <table id={props.tableId}>
          <caption id={`${props.tableId}-caption`}>{props.caption}</caption>
          <thead>
            <tr>
              <th scope="col">Day</th>
              <th scope="col" class="num">
                {props.column}
              </th>
            </tr>
          </thead>
          <tbody>
            {props.days.map((d) => (
              <tr>
                <th scope="row">{d.day}</th>
                <td class="num">{usd(d.usd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
