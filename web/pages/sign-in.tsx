import { Layout } from '../layout';

/** Sign-in with an API key. `formToken` pairs the form with this browser (the sign-in cookie). */
export function SignInPage(props: {
  formToken: string;
  next: string | null;
  problem: string | null;
  sessionHours: number;
}) {
  return (
    <Layout title="Sign in" section="console">
      <h1>Sign in to the console</h1>
      <p class="lead">See your balance, your runs and their logs.</p>
      {props.problem && (
        <div class="notice error" role="alert">
          <p>{props.problem}</p>
        </div>
      )}
      <form method="post" action="/console/sign-in">
        <input type="hidden" name="csrf" value={props.formToken} />
        {props.next && <input type="hidden" name="next" value={props.next} />}
        <p>
          <label for="api_key">API key</label>
          <input
            id="api_key"
            name="api_key"
            type="password"
            autocomplete="current-password"
            required
            maxlength={256}
            aria-describedby="api-key-help"
          />
        </p>
        <p id="api-key-help" class="meta">
          {`The key your operator gave you (sk_live_…). It is checked and forgotten: the console keeps a session of its own, for at most ${props.sessionHours} hours.`}
        </p>
        <p>
          <button type="submit">Sign in</button>
        </p>
      </form>
    </Layout>
  );
}
