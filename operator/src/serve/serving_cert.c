/* serving_cert.c - a CA and the serving certificates it signs, over
 * OpenSSL; see serving_cert.h. */
#include "serving_cert.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"

#define PEM_MAX 65536 /* a CA file: a certificate or a key, a few KiB */

void pem_pair_release(struct pem_pair *p)
{
	if (p == NULL)
		return;
	free(p->cert);
	if (p->key != NULL)
		OPENSSL_cleanse(p->key, strlen(p->key));
	free(p->key);
	memset(p, 0, sizeof(*p));
}

/* err: what failed, and OpenSSL's own reason. */
static int ossl_fail(char *err, const char *what)
{
	char reason[256];

	ERR_error_string_n(ERR_get_error(), reason, sizeof(reason));
	ERR_clear_error();
	return err_set(err, "%s: %s", what, reason);
}

/* A BIO's bytes as a malloc'd string. */
static char *bio_string(BIO *b)
{
	char *data = NULL;
	long n = BIO_get_mem_data(b, &data);
	char *s = xcalloc((size_t)n + 1, 1);

	memcpy(s, data, (size_t)n);
	return s;
}

static long long asn1_time_s(const ASN1_TIME *t)
{
	struct tm tm;

	if (ASN1_TIME_to_tm(t, &tm) != 1)
		return 0;
	return (long long)timegm(&tm);
}

/* x and key into p as PEM. */
static int to_pem(struct pem_pair *p, X509 *x, EVP_PKEY *key, char *err)
{
	BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
	int rc = -1;

	if (cb == NULL || kb == NULL || PEM_write_bio_X509(cb, x) != 1 ||
	    PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL) != 1) {
		ossl_fail(err, "PEM_write_bio");
		goto out;
	}
	p->cert = bio_string(cb);
	p->key = bio_string(kb);
	p->not_before_s = asn1_time_s(X509_get0_notBefore(x));
	p->not_after_s = asn1_time_s(X509_get0_notAfter(x));
	rc = 0;
out:
	BIO_free(cb);
	BIO_free_all(kb);
	return rc;
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (ext == NULL)
		return -1;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok == 1 ? 0 : -1;
}

/* A new certificate for key, named cn, valid from now for days, with a
 * random serial; signed later. */
static X509 *new_cert(EVP_PKEY *key, const char *cn, int days)
{
	X509 *x = X509_new();
	unsigned char serial[16];
	BIGNUM *bn = NULL;
	int ok;

	if (x == NULL || RAND_bytes(serial, sizeof(serial)) != 1)
		goto fail;
	serial[0] &= 0x7f; /* a positive serial (RFC 5280 4.1.2.2) */
	bn = BN_bin2bn(serial, sizeof(serial), NULL);
	ok = bn != NULL && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL &&
	     X509_set_version(x, 2) == 1 && X509_gmtime_adj(X509_getm_notBefore(x), -300) &&
	     X509_gmtime_adj(X509_getm_notAfter(x), (long)days * 86400) &&
	     X509_set_pubkey(x, key) == 1 &&
	     X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
	                                (const unsigned char *)cn, -1, -1, 0) == 1;
	BN_free(bn);
	if (ok)
		return x;
fail:
	X509_free(x);
	return NULL;
}

int serving_cert_make_ca(struct pem_pair *ca, const char *cn, int days, char *err)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = NULL;
	int rc = -1;

	memset(ca, 0, sizeof(*ca));
	if (key == NULL) {
		ossl_fail(err, "EVP_EC_gen");
		goto out;
	}
	x = new_cert(key, cn, days);
	if (x == NULL || X509_set_issuer_name(x, X509_get_subject_name(x)) != 1 ||
	    add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(x, x, NID_subject_key_identifier, "hash") < 0 ||
	    X509_sign(x, key, EVP_sha256()) == 0) {
		ossl_fail(err, "making the CA certificate");
		goto out;
	}
	rc = to_pem(ca, x, key, err);
out:
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

/* The CA's certificate and key from PEM. */
static int ca_parse(const struct pem_pair *ca, X509 **x, EVP_PKEY **key, char *err)
{
	BIO *cb = BIO_new_mem_buf(ca->cert, -1), *kb = BIO_new_mem_buf(ca->key, -1);
	int rc = -1;

	*x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
	*key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
	if (*x == NULL || *key == NULL)
		ossl_fail(err, "reading the CA");
	else if (X509_check_ca(*x) == 0)
		err_set(err, "the CA's certificate is not a CA's");
	else if (X509_check_private_key(*x, *key) != 1)
		err_set(err, "the CA's key is not its certificate's");
	else
		rc = 0;
	BIO_free(cb);
	BIO_free(kb);
	if (rc < 0) {
		X509_free(*x);
		EVP_PKEY_free(*key);
		*x = NULL;
		*key = NULL;
	}
	return rc;
}

/* dir/name as a NUL-terminated string into *out (malloc'd). */
static int read_text(const char *dir, const char *name, char **out, char *err)
{
	char path[4096];
	unsigned char *data = NULL;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (file_read_all(path, PEM_MAX, &data, &n, err) < 0)
		return -1;
	*out = xcalloc(n + 1, 1);
	memcpy(*out, data, n);
	OPENSSL_cleanse(data, n);
	free(data);
	return 0;
}

/* One of the folder's pairs of files, as PEM into ca. */
static int read_pair(struct pem_pair *ca, const char *dir, const char *crt, const char *key,
                     char *err)
{
	if (read_text(dir, crt, &ca->cert, err) < 0)
		return -1;
	if (read_text(dir, key, &ca->key, err) < 0) {
		pem_pair_release(ca);
		return -1;
	}
	return 0;
}

int serving_cert_load_ca(struct pem_pair *ca, const char *dir, char *err)
{
	char path[4096];
	X509 *x = NULL;
	EVP_PKEY *key = NULL;
	FILE *f;

	memset(ca, 0, sizeof(*ca));
	snprintf(path, sizeof(path), "%s/tls.crt", dir);
	f = fopen(path, "r");
	if (f != NULL)
		fclose(f);
	if (read_pair(ca, dir, f != NULL ? "tls.crt" : "ca.crt", f != NULL ? "tls.key" : "ca.key",
	              err) < 0)
		return -1;
	if (ca_parse(ca, &x, &key, err) < 0) {
		pem_pair_release(ca);
		return err_prefix(err, "the CA in '%s'", dir);
	}
	ca->not_before_s = asn1_time_s(X509_get0_notBefore(x));
	ca->not_after_s = asn1_time_s(X509_get0_notAfter(x));
	X509_free(x);
	EVP_PKEY_free(key);
	return 0;
}

/* "DNS:a,DNS:b,IP:10.0.0.1" for names. */
static int san_value(char *out, size_t cap, const char *const *names, int n)
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		unsigned char buf[16];
		int ip = inet_pton(AF_INET, names[i], buf) == 1 ||
		         inet_pton(AF_INET6, names[i], buf) == 1;
		int w = snprintf(out + used, cap - used, "%s%s:%s", i ? "," : "", ip ? "IP" : "DNS",
		                 names[i]);

		if (w < 0 || (size_t)w >= cap - used || strchr(names[i], ',') != NULL)
			return -1;
		used += (size_t)w;
	}
	return 0;
}

int serving_cert_issue(struct pem_pair *out, const struct pem_pair *ca, const char *const *names,
                       int n, int days, char *err)
{
	char san[4096];
	X509 *cx = NULL, *x = NULL;
	EVP_PKEY *ck = NULL, *key = NULL;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (n < 1 || n > SERVING_NAMES_MAX || san_value(san, sizeof(san), names, n) < 0)
		return err_set(err, "a serving certificate needs 1 to %d names without commas",
		               SERVING_NAMES_MAX);
	if (ca_parse(ca, &cx, &ck, err) < 0)
		return -1;
	key = EVP_EC_gen("P-256");
	if (key == NULL) {
		ossl_fail(err, "EVP_EC_gen");
		goto out;
	}
	x = new_cert(key, names[0], days);
	if (x == NULL || X509_set_issuer_name(x, X509_get_subject_name(cx)) != 1 ||
	    add_ext(x, cx, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(x, cx, NID_key_usage, "critical,digitalSignature,keyEncipherment") < 0 ||
	    add_ext(x, cx, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(x, cx, NID_authority_key_identifier, "keyid") < 0 ||
	    add_ext(x, cx, NID_subject_alt_name, san) < 0 || X509_sign(x, ck, EVP_sha256()) == 0) {
		ossl_fail(err, "making the serving certificate");
		goto out;
	}
	rc = to_pem(out, x, key, err);
out:
	X509_free(x);
	X509_free(cx);
	EVP_PKEY_free(key);
	EVP_PKEY_free(ck);
	return rc;
}

long long serving_cert_due(const struct pem_pair *p)
{
	return p->not_before_s + (p->not_after_s - p->not_before_s) * 2 / 3;
}
