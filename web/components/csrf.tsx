/** The session's CSRF token, in every form that changes something. */
export function CsrfField(props: { token: string }) {
  return <input type="hidden" name="csrf" value={props.token} />;
}
