// /config.json: the SPA's runtime OIDC settings, so one built SPA serves every environment.
// Values come from NGINX variables set from SG_OIDC_*; JSON.stringify does the escaping.

/**
 * The runtime config object the SPA reads at start. `cloudfront` is present only when a private
 * image is configured, which is how the SPA knows to show its CloudFront panel.
 * @param {{ issuer?: string, clientId?: string, scope?: string, audience?: string, cloudFrontImageUrl?: string }} values
 */
function runtimeConfig(values) {
  /** @type {{ issuer: string, clientId: string, scope: string, audience: string, cloudfront?: { imageUrl: string } }} */
  var config = {
    issuer: values.issuer || '',
    clientId: values.clientId || '',
    scope: values.scope || '',
    audience: values.audience || '',
  };
  if (values.cloudFrontImageUrl) {
    config.cloudfront = { imageUrl: values.cloudFrontImageUrl };
  }
  return config;
}

/**
 * `js_content runtime_config.respond;` with `$sg_oidc_issuer`, `$sg_oidc_client_id`,
 * `$sg_oidc_scope`, `$sg_oidc_audience` and `$sg_cloudfront_image_url` set in the location.
 * @param {NginxHTTPRequest} r
 */
function respond(r) {
  var v = r.variables;
  var body = runtimeConfig({
    issuer: v.sg_oidc_issuer,
    clientId: v.sg_oidc_client_id,
    scope: v.sg_oidc_scope,
    audience: v.sg_oidc_audience,
    cloudFrontImageUrl: v.sg_cloudfront_image_url,
  });
  r.headersOut['Content-Type'] = 'application/json';
  r.return(200, JSON.stringify(body) + '\n');
}

export default { respond, runtimeConfig };
