/* handshake.c - the four messages of the ring's connection handshake, their
 * encoding, and the verdicts each side reaches. */
#include "handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "bytes.h"

static const unsigned char HELLO_MAGIC[8] = {'M', 'W', 'J', 'R', 'I', 'N', 'G', '\n'};

/* The hello's flags. Unknown bits are ignored, for later versions. */
#define FLAG_KEYED 1u

/* Verdicts on the wire. */
enum { VERDICT_OK, VERDICT_REFUSED, VERDICT_UNAUTHENTICATED, VERDICT_CODES };

/* Where each message starts in the transcript, and its length. */
static const size_t MSG_OFF[5] = {
    0,
    HANDSHAKE_HELLO_BYTES,
    2 * HANDSHAKE_HELLO_BYTES + HANDSHAKE_VERDICT_BYTES,
    2 * HANDSHAKE_HELLO_BYTES + 2 * HANDSHAKE_VERDICT_BYTES,
    HANDSHAKE_WIRE_BYTES,
};
static const char *const MSG_NAME[4] = {"hello", "reply", "proof", "final verdict"};

/* The verdict inside messages 1 to 3 (message 1 is a hello, then one). */
#define VERDICT_AT(m) (MSG_OFF[(m) + 1] - HANDSHAKE_VERDICT_BYTES)

/* Domain labels of the MACs: each side's MACs are its own. */
static const char LABEL_CONNECT[] = "mwj-ring-v2 connect";
static const char LABEL_ACCEPT[] = "mwj-ring-v2 accept";

static int keyed(const struct handshake *h)
{
	return h->key != NULL && h->key->len > 0;
}

/* hello.collective for people. */
static const char *collective_name(uint32_t c)
{
	switch (c) {
	case HELLO_COLLECTIVE_HOST:
		return "ring (CPU)";
	case HELLO_COLLECTIVE_NCCL:
		return "nccl (GPU)";
	case HELLO_COLLECTIVE_HOST_GPU:
		return "ring (GPU)";
	default:
		return "unknown";
	}
}

/* Whether this side sends message m. */
static int sends(const struct handshake *h, int m)
{
	return (m % 2 == 0) == (h->role == HANDSHAKE_CONNECT);
}

static void hello_encode(unsigned char *p, const struct hello *me, uint32_t flags,
                         const unsigned char *nonce)
{
	memcpy(p, HELLO_MAGIC, sizeof(HELLO_MAGIC));
	bytes_put_be32(p + 8, me->protocol);
	bytes_put_be32(p + 12, me->world);
	bytes_put_be32(p + 16, me->rank);
	bytes_put_be32(p + 20, me->batch_size);
	bytes_put_be64(p + 24, me->job_hash);
	bytes_put_be64(p + 32, me->arch_hash);
	bytes_put_be64(p + 40, me->seed);
	bytes_put_be64(p + 48, bytes_f64_bits(me->learning_rate));
	bytes_put_be64(p + 56, bytes_f64_bits(me->momentum));
	bytes_put_be32(p + 64, me->optimizer);
	bytes_put_be32(p + 68, me->epochs);
	bytes_put_be64(p + 72, me->steps_per_epoch);
	bytes_put_be32(p + 80, flags);
	bytes_put_be32(p + 84, me->collective);
	memcpy(p + 88, nonce, HANDSHAKE_NONCE_BYTES);
}

/* Decodes a hello; returns its flags, or -1 if it is not one. */
static long hello_decode(struct hello *out, const unsigned char *p)
{
	if (memcmp(p, HELLO_MAGIC, sizeof(HELLO_MAGIC)) != 0)
		return -1;
	*out = (struct hello){
	    .protocol = bytes_get_be32(p + 8),
	    .world = bytes_get_be32(p + 12),
	    .rank = bytes_get_be32(p + 16),
	    .batch_size = bytes_get_be32(p + 20),
	    .job_hash = bytes_get_be64(p + 24),
	    .arch_hash = bytes_get_be64(p + 32),
	    .seed = bytes_get_be64(p + 40),
	    .learning_rate = bytes_bits_f64(bytes_get_be64(p + 48)),
	    .momentum = bytes_bits_f64(bytes_get_be64(p + 56)),
	    .optimizer = bytes_get_be32(p + 64),
	    .epochs = bytes_get_be32(p + 68),
	    .steps_per_epoch = bytes_get_be64(p + 72),
	    .collective = bytes_get_be32(p + 84),
	};
	return (long)bytes_get_be32(p + 80);
}

/* The MAC a side with label puts at wire + end: HMAC-SHA256 under the key
 * over the label and every byte of the transcript before end. A failure
 * of libcrypto leaves zeros, which verify against nothing. */
static void mac(const struct handshake *h, const char *label, size_t end,
                unsigned char out[HANDSHAKE_MAC_BYTES])
{
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0),
	                       OSSL_PARAM_construct_end()};
	EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = hmac ? EVP_MAC_CTX_new(hmac) : NULL;
	size_t len = 0;

	if (!ctx || !EVP_MAC_init(ctx, h->key->bytes, h->key->len, params) ||
	    !EVP_MAC_update(ctx, (const unsigned char *)label, strlen(label)) ||
	    !EVP_MAC_update(ctx, h->wire, end) ||
	    !EVP_MAC_final(ctx, out, &len, HANDSHAKE_MAC_BYTES) || len != HANDSHAKE_MAC_BYTES)
		memset(out, 0, HANDSHAKE_MAC_BYTES);
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(hmac);
}

/* Writes this side's verdict into message m. */
static void verdict_encode(struct handshake *h, int m, uint32_t status, const char *why)
{
	unsigned char *p = h->wire + VERDICT_AT(m);
	size_t mac_at = VERDICT_AT(m) + 4 + HANDSHAKE_REASON_BYTES;

	bytes_put_be32(p, status);
	memset(p + 4, 0, HANDSHAKE_REASON_BYTES);
	snprintf((char *)p + 4, HANDSHAKE_REASON_BYTES, "%s", why);
	if (keyed(h))
		mac(h, h->role == HANDSHAKE_CONNECT ? LABEL_CONNECT : LABEL_ACCEPT, mac_at,
		    h->wire + mac_at);
	else
		memset(h->wire + mac_at, 0, HANDSHAKE_MAC_BYTES);
}

/* Reads the peer's verdict in message m into theirs (the first refusal
 * stays) and checks its MAC. Returns -1 for a status that is no verdict. */
static int verdict_decode(struct handshake *h, int m)
{
	const unsigned char *p = h->wire + VERDICT_AT(m);
	size_t mac_at = VERDICT_AT(m) + 4 + HANDSHAKE_REASON_BYTES;
	uint32_t status = bytes_get_be32(p);
	unsigned char want[HANDSHAKE_MAC_BYTES];

	if (status >= VERDICT_CODES)
		return -1;
	if (keyed(h) && h->peer_keyed) {
		mac(h, h->role == HANDSHAKE_CONNECT ? LABEL_ACCEPT : LABEL_CONNECT, mac_at, want);
		if (CRYPTO_memcmp(want, h->wire + mac_at, HANDSHAKE_MAC_BYTES) != 0)
			h->macs_ok = 0;
	}
	if (h->theirs == VERDICT_OK && status != VERDICT_OK) {
		h->theirs = status;
		/* A reason from the peer: printable ASCII only, in messages. */
		size_t i = 0;
		for (; i + 1 < sizeof(h->their_why) && p[4 + i]; i++)
			h->their_why[i] =
			    p[4 + i] >= 0x20 && p[4 + i] < 0x7f ? (char)p[4 + i] : '?';
		h->their_why[i] = '\0';
	}
	return 0;
}

/* This side's verdict on the key: before the configuration, since a
 * refusal means nothing until the peer has proved itself. */
static uint32_t key_verdict(const struct handshake *h, char *why)
{
	const char *w = NULL;

	if (keyed(h) && !h->peer_keyed)
		w = "no job key on the peer's side (--job-secret-file), and this worker requires "
		    "one";
	else if (!keyed(h) && h->peer_keyed)
		w = "the peer authenticates with a job key, and this worker has none "
		    "(--job-secret-file)";
	else if (keyed(h) && !h->macs_ok)
		w = "the peer does not hold this job's key (another --job-secret-file, or not a "
		    "worker of this job)";
	if (w == NULL)
		return VERDICT_OK;
	snprintf(why, HANDSHAKE_REASON_BYTES, "%s", w);
	return VERDICT_UNAUTHENTICATED;
}

/* This side's whole verdict on the peer: the key, then the configuration. */
static void judge(struct handshake *h)
{
	char why[ERR_LEN];

	h->own = key_verdict(h, h->own_why);
	if (h->own != VERDICT_OK)
		return;
	if (handshake_check(&h->me, &h->peer, h->want_rank, why) < 0) {
		h->own = VERDICT_REFUSED;
		/* The reason travels in a field of its own size. */
		snprintf(h->own_why, sizeof(h->own_why), "%.*s", (int)sizeof(h->own_why) - 1, why);
	}
}

/* After another MAC of the peer's: a peer that has not proved it holds
 * the key is refused for that, whatever else this side thought of it. */
static void recheck_key(struct handshake *h)
{
	char why[HANDSHAKE_REASON_BYTES];

	if (h->own != VERDICT_UNAUTHENTICATED && key_verdict(h, why) != VERDICT_OK) {
		h->own = VERDICT_UNAUTHENTICATED;
		memcpy(h->own_why, why, sizeof(why));
	}
}

static void finish(struct handshake *h, enum handshake_status status, const char *why)
{
	h->status = status;
	h->msg = 4;
	snprintf(h->why, sizeof(h->why), "%s", why);
}

static enum handshake_status status_of(uint32_t verdict)
{
	switch (verdict) {
	case VERDICT_OK:
		return HANDSHAKE_OK;
	case VERDICT_REFUSED:
		return HANDSHAKE_REFUSED;
	default:
		return HANDSHAKE_UNAUTHENTICATED;
	}
}

/* The outcome once every message has moved. A peer that did not prove
 * itself is refused for that before anything else, so that its verdict is
 * never believed. Otherwise the first refusal in the order the messages
 * went is the one to report: the reply's verdict first, which is the
 * accepting side's own judgement and the first the connecting side hears,
 * as each would have said it with one message each way. */
static void conclude(struct handshake *h)
{
	h->authenticated = keyed(h) && h->peer_keyed && h->macs_ok;
	if (h->own == VERDICT_UNAUTHENTICATED) {
		finish(h, HANDSHAKE_UNAUTHENTICATED, h->own_why);
		return;
	}
	/* A verdict that never went (the final one, at times) reads as OK. */
	for (int m = 1; m <= 3; m++) {
		uint32_t v = bytes_get_be32(h->wire + VERDICT_AT(m));
		if (v != VERDICT_OK) {
			h->by_peer = !sends(h, m);
			finish(h, status_of(v), h->by_peer ? h->their_why : h->own_why);
			return;
		}
	}
	finish(h, HANDSHAKE_OK, "");
}

/* Decodes the peer's hello in message m. Returns -1 (finished, BAD) if it
 * is not an mwj hello. */
static int take_hello(struct handshake *h, int m)
{
	long flags = hello_decode(&h->peer, h->wire + MSG_OFF[m]);

	if (flags < 0) {
		finish(h, HANDSHAKE_BAD, "not an mwj worker (bad greeting)");
		return -1;
	}
	h->have_peer = 1;
	h->peer_keyed = (flags & FLAG_KEYED) != 0;
	return 0;
}

/* Whether the final verdict goes out: only when both verdicts so far were
 * OK does the connecting side wait for it. Otherwise both already know the
 * outcome and end there, each having what it needs to believe the other:
 * the accepting side's reply and the connecting side's proof. */
static int final_expected(const struct handshake *h)
{
	return bytes_get_be32(h->wire + VERDICT_AT(1)) == VERDICT_OK &&
	       bytes_get_be32(h->wire + VERDICT_AT(2)) == VERDICT_OK;
}

/* Acts on message m, now whole: decodes what came, and prepares what goes
 * next. */
static void on_message(struct handshake *h, int m)
{
	int received = !sends(h, m);

	if (received && m <= 1 && take_hello(h, m) < 0)
		return;
	if (received && m >= 1 && verdict_decode(h, m) < 0) {
		finish(h, HANDSHAKE_BAD, "bad handshake: not a verdict");
		return;
	}
	switch (m) {
	case 0: /* accepting: answer the hello with ours and a verdict */
		if (received) {
			judge(h);
			hello_encode(h->wire + MSG_OFF[1], &h->me, keyed(h) ? FLAG_KEYED : 0,
			             h->nonce);
			verdict_encode(h, 1, h->own, h->own_why);
		}
		break;
	case 1: /* connecting: our verdict, proving the key over both hellos */
		if (received) {
			judge(h);
			verdict_encode(h, 2, h->own, h->own_why);
		}
		break;
	case 2: /* the proof: the connecting side has proved itself now, or not */
		if (received)
			recheck_key(h);
		if (!final_expected(h))
			conclude(h);
		else if (received)
			verdict_encode(h, 3, h->own, h->own_why);
		break;
	case 3: /* the final verdict, also proved */
		if (received)
			recheck_key(h);
		conclude(h);
		break;
	}
}

void handshake_init(struct handshake *h, enum handshake_role role, const struct hello *me,
                    const struct job_key *key, uint32_t want_rank)
{
	memset(h, 0, sizeof(*h));
	h->role = role;
	h->me = *me;
	h->key = key;
	h->want_rank = want_rank;
	h->macs_ok = 1;
	h->status = HANDSHAKE_PENDING;
	/* Without a key the nonce only has to be there; with one it must be
	 * unpredictable, or a recorded handshake could be replayed. */
	if (RAND_bytes(h->nonce, sizeof(h->nonce)) != 1 && keyed(h)) {
		finish(h, HANDSHAKE_BAD, "RAND_bytes: no random nonce for the handshake");
		return;
	}
	if (role == HANDSHAKE_CONNECT)
		hello_encode(h->wire, me, keyed(h) ? FLAG_KEYED : 0, h->nonce);
}

enum handshake_io handshake_io(struct handshake *h, unsigned char **buf, size_t *len)
{
	if (h->msg >= 4)
		return HANDSHAKE_DONE;
	*buf = h->wire + MSG_OFF[h->msg] + h->off;
	*len = MSG_OFF[h->msg + 1] - MSG_OFF[h->msg] - h->off;
	return sends(h, h->msg) ? HANDSHAKE_SEND : HANDSHAKE_RECV;
}

void handshake_moved(struct handshake *h, size_t n)
{
	if (h->msg >= 4)
		return;
	h->off += n;
	if (h->off < MSG_OFF[h->msg + 1] - MSG_OFF[h->msg])
		return;
	int m = h->msg;
	h->msg++;
	h->off = 0;
	on_message(h, m);
}

void handshake_progress(const struct handshake *h, char *out, size_t n)
{
	int m = h->msg < 4 ? h->msg : 3;

	snprintf(out, n, "%zu of %zu bytes of the %s", h->msg < 4 ? h->off : 0,
	         MSG_OFF[m + 1] - MSG_OFF[m], MSG_NAME[m]);
}

int handshake_check(const struct hello *mine, const struct hello *theirs, uint32_t want_rank,
                    char *why)
{
	if (theirs->protocol != mine->protocol)
		return err_set(why, "protocol version differs: peer %u, this worker %u",
		               theirs->protocol, mine->protocol);
	/* The job identity covers the cluster list, so a different world size
	 * would also show as another job: say the more precise thing first. */
	if (theirs->world != mine->world)
		return err_set(why, "world size differs: peer %u, this worker %u", theirs->world,
		               mine->world);
	if (theirs->job_hash != mine->job_hash)
		return err_set(why,
		               "peer belongs to another job (TF_CONFIG cluster or MWJ_JOB_NAME "
		               "differ)");
	if (theirs->rank != want_rank)
		return err_set(why, "peer is rank %u where rank %u was expected", theirs->rank,
		               want_rank);
	if (theirs->arch_hash != mine->arch_hash)
		return err_set(why, "model differs: peer architecture %016llx, this worker %016llx",
		               (unsigned long long)theirs->arch_hash,
		               (unsigned long long)mine->arch_hash);
	if (theirs->seed != mine->seed)
		return err_set(why, "--seed differs: peer %llu, this worker %llu",
		               (unsigned long long)theirs->seed, (unsigned long long)mine->seed);
	if (theirs->batch_size != mine->batch_size)
		return err_set(why, "--batch-size differs: peer %u, this worker %u",
		               theirs->batch_size, mine->batch_size);
	if (theirs->optimizer != mine->optimizer || theirs->learning_rate != mine->learning_rate ||
	    theirs->momentum != mine->momentum)
		return err_set(why,
		               "optimizer settings differ: peer lr %g momentum %g, this worker "
		               "lr %g momentum %g (or --optimizer)",
		               theirs->learning_rate, theirs->momentum, mine->learning_rate,
		               mine->momentum);
	if (theirs->epochs != mine->epochs || theirs->steps_per_epoch != mine->steps_per_epoch)
		return err_set(why,
		               "--epochs or --steps-per-epoch differ: peer %u x %llu, this "
		               "worker %u x %llu",
		               theirs->epochs, (unsigned long long)theirs->steps_per_epoch,
		               mine->epochs, (unsigned long long)mine->steps_per_epoch);
	if (theirs->collective != mine->collective)
		return err_set(why,
		               "collective differs: peer %s, this worker %s (--device and "
		               "--collective must resolve alike on every worker)",
		               collective_name(theirs->collective),
		               collective_name(mine->collective));
	return 0;
}
