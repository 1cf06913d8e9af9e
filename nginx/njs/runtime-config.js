// /config.json: the SPA's runtime OIDC settings, so one built SPA serves every environment.
// Values come from NGINX variables set from SG_OIDC_*; JSON.stringify does the escaping.

/**
 * The runtime config object the SPA reads at start.
 * @param {{ issuer?: string, clientId?: string, scope?: string, audience?: string }} values
 */
function runtimeConfig(values) {
  return {
    issuer: values.issuer || '',
    clientId: values.clientId || '',
    scope: values.scope || '',
    audience: values.audience || '',
  };
}

/**
 * `js_content runtime_config.respond;` with `$sg_oidc_issuer`, `$sg_oidc_client_id`,
 * `$sg_oidc_scope` and `$sg_oidc_audience` set in the location.
 * @param {NginxHTTPRequest} r
 */
function respond(r) {
  var v = r.variables;
  var body = runtimeConfig({
    issuer: v.sg_oidc_issuer,
    clientId: v.sg_oidc_client_id,
    scope: v.sg_oidc_scope,
    audience: v.sg_oidc_audience,
  });
  r.headersOut['Content-Type'] = 'application/json';
  r.return(200, JSON.stringify(body) + '\n');
}

export default { respond, runtimeConfig };
