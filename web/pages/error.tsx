import { Layout } from '../layout';

export function ErrorPage(props: { status: number; title: string; message: string; requestId?: string }) {
  return (
    <Layout title={props.title} section={null}>
      <h1>{props.title}</h1>
      <p>{props.message}</p>
      <p>
        <a href="/market">Go to the market</a> or <a href="/console">your console</a>.
      </p>
      {props.requestId && <p class="meta">{`Status ${props.status} · request ${props.requestId}`}</p>}
    </Layout>
  );
}
