/* fuzz_kubeconfig.c - a libFuzzer target for kube_config_load_file
 * (kubeconfig.h) and the libyaml reader under it (kubeconfig_file.h): the
 * kubeconfig the operator is started with.
 *
 * Input: the kubeconfig; if it holds a NUL byte, what follows the first one
 * is the context asked for (else the file's current-context). The file is
 * written as "config" in a folder that also holds ca.crt, client.crt,
 * client.key and token, which relative paths in the fixtures name.
 * Checked beyond "no crash": a refusal names the file; an accepted
 * configuration has an http or https server URL without blanks or
 * control characters, a namespace that is a DNS label or empty, no CA with
 * insecure-skip-tls-verify, at most one form of each credential, and a
 * token that kube_config_token() hands out.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "fuzz/harness.h"
#include "kubeconfig.h"

#define CONTEXT_MAX 300 /* more than a name may have, to reach the check */

/* The files beside the kubeconfig that fixtures refer to, made once. */
static void write_neighbours(void)
{
	static const char *const names[] = {"ca.crt", "client.crt", "client.key"};
	static int done;

	if (done)
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		fuzz_file(names[i], "-----BEGIN CERTIFICATE-----\n", 28);
	fuzz_file("token", "fuzz-token\n", 11);
	done = 1;
}

static int is_printable(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	}
	return 1;
}

static void check_accepted(struct kube_config *c, const char *path)
{
	char token[KUBE_CONFIG_TOKEN_LEN], err[ERR_LEN];
	size_t ns = strlen(c->namespace);

	FUZZ_CHECK(strcmp(c->source, path) == 0 && c->locked_init);
	FUZZ_CHECK(strncasecmp(c->server, "http://", 7) == 0 ||
	           strncasecmp(c->server, "https://", 8) == 0);
	FUZZ_CHECK(strpbrk(c->server, " \t\r\n") == NULL && is_printable(c->server));
	FUZZ_CHECK(ns == 0 || (ns <= 63 && strspn(c->namespace,
	                                          "abcdefghijklmnopqrstuvwxyz0123456789-") == ns));
	FUZZ_CHECK(!(c->insecure && (c->ca_file[0] != '\0' || c->ca_pem != NULL)));
	FUZZ_CHECK(!(c->ca_file[0] != '\0' && c->ca_pem != NULL));
	FUZZ_CHECK(!(c->cert_file[0] != '\0' && c->cert_pem != NULL));
	FUZZ_CHECK(!(c->key_file[0] != '\0' && c->key_pem != NULL));
	FUZZ_CHECK(is_printable(c->token));
	if (kube_config_token(c, token, sizeof(token), err) == 0)
		FUZZ_CHECK(is_printable(token));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t len = nul != NULL ? (size_t)(nul - data) : size;
	char context[CONTEXT_MAX + 1] = "", path[4096], err[ERR_LEN] = "";
	struct kube_config c;

	write_neighbours();
	if (nul != NULL) {
		size_t n = size - len - 1;

		n = n < CONTEXT_MAX ? n : CONTEXT_MAX;
		memcpy(context, nul + 1, n);
		context[n] = '\0';
	}
	snprintf(path, sizeof(path), "%s", fuzz_file("config", data, len));
	if (kube_config_load_file(&c, path, nul != NULL ? context : NULL, err) == 0) {
		check_accepted(&c, path);
	} else {
		FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		FUZZ_CHECK(strstr(err, path) != NULL);
	}
	kube_config_release(&c);
	return 0;
}
