/* test_serving_cert.c - the status endpoint's CA and serving
 * certificates: a certificate the CA signs verifies against it for every
 * name given and no other, is for servers only, and is due again two
 * thirds through its life; a CA is read from a Secret's folder in either
 * naming, and a folder whose certificate is no CA's, or whose key is
 * another's, is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "serving_cert.h"

static X509 *cert_of(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);

	BIO_free(b);
	assert_non_null(x);
	return x;
}

/* Whether leaf verifies against ca for a server named host. */
static int verifies(const struct pem_pair *ca, const struct pem_pair *leaf, const char *host)
{
	X509 *cx = cert_of(ca->cert), *lx = cert_of(leaf->cert);
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *param;
	int ok;

	X509_STORE_add_cert(store, cx);
	X509_STORE_CTX_init(ctx, store, lx, NULL);
	param = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
	if (strchr(host, ':') != NULL || (host[0] >= '0' && host[0] <= '9'))
		X509_VERIFY_PARAM_set1_ip_asc(param, host);
	else
		X509_VERIFY_PARAM_set1_host(param, host, 0);
	ok = X509_verify_cert(ctx) == 1;
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	X509_free(cx);
	X509_free(lx);
	return ok;
}

static void test_a_serving_certificate_verifies_for_its_names_only(void **state)
{
	const char *names[] = {"mwj-operator-status.mwj-system.svc", "localhost", "127.0.0.1"};
	struct pem_pair ca, leaf, other;
	char err[ERR_LEN] = "";
	X509 *x;

	(void)state;
	assert_int_equal(serving_cert_make_ca(&ca, "mwj-operator status CA", SERVING_CA_DAYS, err),
	                 0);
	assert_int_equal(serving_cert_issue(&leaf, &ca, names, 3, SERVING_CERT_DAYS, err), 0);
	assert_non_null(strstr(leaf.key, "-----BEGIN PRIVATE KEY-----"));
	assert_true(verifies(&ca, &leaf, "mwj-operator-status.mwj-system.svc"));
	assert_true(verifies(&ca, &leaf, "localhost"));
	assert_true(verifies(&ca, &leaf, "127.0.0.1"));
	assert_false(verifies(&ca, &leaf, "mwj-operator-status.default.svc"));
	assert_false(verifies(&ca, &leaf, "10.0.0.1"));
	/* Not for another CA's clients. */
	assert_int_equal(serving_cert_make_ca(&other, "another CA", 1, err), 0);
	assert_false(verifies(&other, &leaf, "localhost"));
	/* A server's certificate, not a CA's. */
	x = cert_of(leaf.cert);
	assert_int_equal(X509_check_ca(x), 0);
	X509_free(x);
	assert_int_equal(leaf.not_after_s - leaf.not_before_s, SERVING_CERT_DAYS * 86400LL + 300);
	assert_int_equal(serving_cert_due(&leaf),
	                 leaf.not_before_s + (leaf.not_after_s - leaf.not_before_s) * 2 / 3);
	pem_pair_release(&leaf);
	pem_pair_release(&other);
	pem_pair_release(&ca);
}

static void test_names_are_checked(void **state)
{
	const char *comma[] = {"a,DNS:evil"};
	const char *many[SERVING_NAMES_MAX + 1];
	struct pem_pair ca, leaf;
	char err[ERR_LEN] = "";

	(void)state;
	for (int i = 0; i <= SERVING_NAMES_MAX; i++)
		many[i] = "x";
	assert_int_equal(serving_cert_make_ca(&ca, "ca", 1, err), 0);
	assert_int_equal(serving_cert_issue(&leaf, &ca, comma, 1, 1, err), -1);
	assert_int_equal(serving_cert_issue(&leaf, &ca, many, SERVING_NAMES_MAX + 1, 1, err), -1);
	assert_int_equal(serving_cert_issue(&leaf, &ca, many, 0, 1, err), -1);
	assert_string_equal(err, "a serving certificate needs 1 to 8 names without commas");
	pem_pair_release(&ca);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[512], err[ERR_LEN];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (atomic_file_write(path, text, strlen(text), 0600, err) < 0)
		fail_msg("%s", err);
}

static void test_a_ca_is_read_from_a_secrets_folder(void **state)
{
	char dir[] = "/tmp/mwj-test-ca-XXXXXX", err[ERR_LEN] = "";
	const char *names[] = {"localhost"};
	struct pem_pair ca, other, got, leaf;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(serving_cert_make_ca(&ca, "ca", 10, err), 0);
	assert_int_equal(serving_cert_make_ca(&other, "other", 10, err), 0);
	/* kubernetes.io/tls names. */
	write_text(dir, "tls.crt", ca.cert);
	write_text(dir, "tls.key", ca.key);
	assert_int_equal(serving_cert_load_ca(&got, dir, err), 0);
	assert_string_equal(got.cert, ca.cert);
	assert_int_equal(serving_cert_issue(&leaf, &got, names, 1, 1, err), 0);
	assert_true(verifies(&ca, &leaf, "localhost"));
	pem_pair_release(&leaf);
	pem_pair_release(&got);
	/* A key that is not the certificate's. */
	write_text(dir, "tls.key", other.key);
	assert_int_equal(serving_cert_load_ca(&got, dir, err), -1);
	assert_non_null(strstr(err, "the CA's key is not its certificate's"));
	/* ca.crt and ca.key, when there is no tls.crt. */
	snprintf(err, sizeof(err), "%s/tls.crt", dir);
	unlink(err);
	snprintf(err, sizeof(err), "%s/tls.key", dir);
	unlink(err);
	write_text(dir, "ca.crt", other.cert);
	write_text(dir, "ca.key", other.key);
	assert_int_equal(serving_cert_load_ca(&got, dir, err), 0);
	pem_pair_release(&got);
	/* A server's certificate is no CA. */
	assert_int_equal(serving_cert_issue(&leaf, &ca, names, 1, 1, err), 0);
	write_text(dir, "ca.crt", leaf.cert);
	write_text(dir, "ca.key", leaf.key);
	assert_int_equal(serving_cert_load_ca(&got, dir, err), -1);
	assert_non_null(strstr(err, "is not a CA's"));
	/* Nothing there. */
	snprintf(err, sizeof(err), "%s/ca.crt", dir);
	unlink(err);
	assert_int_equal(serving_cert_load_ca(&got, dir, err), -1);
	assert_non_null(strstr(err, "ca.crt"));
	snprintf(err, sizeof(err), "%s/ca.key", dir);
	unlink(err);
	rmdir(dir);
	pem_pair_release(&leaf);
	pem_pair_release(&ca);
	pem_pair_release(&other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_serving_certificate_verifies_for_its_names_only),
	    cmocka_unit_test(test_names_are_checked),
	    cmocka_unit_test(test_a_ca_is_read_from_a_secrets_folder),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
