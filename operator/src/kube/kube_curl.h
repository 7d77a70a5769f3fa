/* kube_curl.h - the curl backend of the API client (kube_api.h): HTTPS to
 * the API server over libcurl, as a production client talks to it.
 *
 * - HTTP/2 when the server offers it through ALPN (libcurl's default, and
 *   what a real kube-apiserver does), HTTP/1.1 otherwise;
 * - TLS verified against the kubeconfig's CA (file or PEM data), with the
 *   client certificate and key when the kubeconfig has them, unless it
 *   says insecure-skip-tls-verify;
 * - the bearer token from kube_config_token() on every request, so a
 *   rotated service-account token is picked up;
 * - one easy handle per thread, and a share handle so that every thread's
 *   requests reuse the same connections, DNS and TLS sessions;
 * - a watch (stream) with TCP keep-alive and an idle time-out, so that a
 *   connection that went silent is noticed and the watch resumed.
 */
#ifndef MWJ_KUBE_CURL_H
#define MWJ_KUBE_CURL_H

#include "kube_api.h"
#include "kubeconfig.h"

/* Sets api up over libcurl for the server of cfg, which must outlive api.
 * user_agent goes into every request ("mwj-operator/0.1.0"). Returns 0, or
 * -1 with a message (libcurl cannot start, or the server is no https or
 * http URL). Call curl_global_init() once before, in main. */
int kube_curl_init(struct kube_api *api, struct kube_config *cfg, const char *user_agent,
                   char *err);

#endif
