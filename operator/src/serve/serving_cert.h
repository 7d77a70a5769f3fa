/* serving_cert.h - the status endpoint's TLS: a CA that the workers
 * trust, and a serving certificate it signs for the names the workers
 * dial, renewed by the operator before it expires.
 *
 * The CA comes from the chart (a Secret mounted as a folder holding
 * tls.crt and tls.key, or ca.crt and ca.key, made once and kept across
 * upgrades), so that it outlives the operator's pods: the workers of a
 * job made before a restart still trust the operator after it. Without
 * one (a local run) the operator makes a CA of its own at start, which
 * lasts as long as the process.
 *
 * The serving certificate is made by the operator, never stored: an ECDSA
 * P-256 key, SANs for every name given, serverAuth, valid for
 * SERVING_CERT_DAYS; serving_cert_due says when to make the next (two
 * thirds of the way through its life, as cert-manager renews by default).
 * Keys and certificates are PEM strings, as libmicrohttpd takes them.
 */
#ifndef MWJ_SERVING_CERT_H
#define MWJ_SERVING_CERT_H

#include <stddef.h>

#include "err.h"

#define SERVING_CERT_DAYS 30
#define SERVING_CA_DAYS   3650
#define SERVING_NAMES_MAX 8

struct pem_pair {
	char *cert;            /* PEM, malloc'd */
	char *key;             /* PEM (PKCS#8), malloc'd */
	long long not_after_s; /* the certificate's end, Unix seconds */
	long long not_before_s;
};

/* Frees what p holds. Accepts a zeroed p. */
void pem_pair_release(struct pem_pair *p);

/* A new self-signed CA, named cn, valid for days. Returns 0, or -1 with a
 * message (the OpenSSL call that failed). */
int serving_cert_make_ca(struct pem_pair *ca, const char *cn, int days, char *err);

/* Reads a CA from dir: tls.crt and tls.key (a kubernetes.io/tls Secret),
 * else ca.crt and ca.key. The certificate must be a CA's whose key is the
 * key given. Returns 0, or -1 with a message naming the file. */
int serving_cert_load_ca(struct pem_pair *ca, const char *dir, char *err);

/* A serving certificate signed by ca for names (DNS names, or IP
 * addresses written as such), valid for days from now. Returns 0, or -1
 * with a message. */
int serving_cert_issue(struct pem_pair *out, const struct pem_pair *ca, const char *const *names,
                       int n, int days, char *err);

/* When a certificate should be made anew: two thirds of the way from
 * not_before to not_after (Unix seconds). */
long long serving_cert_due(const struct pem_pair *p);

#endif
