/* handshake.c - the five messages of the ring's connection handshake,
 * their encoding, and the verdicts each side reaches. */
#include "handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "bytes.h"

static const unsigned char GREETING_MAGIC[8] = {'M', 'W', 'J', 'R', 'I', 'N', 'G', '\n'};

/* The greeting's flags. Unknown bits are ignored, for later versions. */
#define FLAG_KEYED 1u

/* Verdicts on the wire. */
enum { VERDICT_OK, VERDICT_REFUSED, VERDICT_UNAUTHENTICATED, VERDICT_CODES };

/* The messages: 0 and 1 greetings (1 with a MAC), 2 and 3 a verdict, a
 * hello and a MAC, 4 a verdict and a MAC. Where each starts in the
 * transcript, and the parts inside them. */
#define VERDICT_MSG_BYTES (HANDSHAKE_STATUS_BYTES + HANDSHAKE_HELLO_BYTES + HANDSHAKE_MAC_BYTES)
static const size_t MSG_OFF[HANDSHAKE_MESSAGES + 1] = {
    0,
    HANDSHAKE_GREETING_BYTES,
    2 * HANDSHAKE_GREETING_BYTES + HANDSHAKE_MAC_BYTES,
    2 * HANDSHAKE_GREETING_BYTES + HANDSHAKE_MAC_BYTES + VERDICT_MSG_BYTES,
    2 * HANDSHAKE_GREETING_BYTES + HANDSHAKE_MAC_BYTES + 2 * VERDICT_MSG_BYTES,
    HANDSHAKE_WIRE_BYTES,
};
static const char *const MSG_NAME[HANDSHAKE_MESSAGES] = {"greeting", "greeting reply", "hello",
                                                         "reply", "final verdict"};
#define DONE HANDSHAKE_MESSAGES

/* Each message's MAC is its last bytes; message 0 has none. */
#define MAC_AT(m)   (MSG_OFF[(m) + 1] - HANDSHAKE_MAC_BYTES)
#define HELLO_AT(m) (MSG_OFF[m] + HANDSHAKE_STATUS_BYTES)

/* Domain labels of the MACs: each side's MACs are its own. */
static const char LABEL_CONNECT[] = "mwj-ring-v4 connect";
static const char LABEL_ACCEPT[] = "mwj-ring-v4 accept";

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

/* Whether message m carries a verdict (2, 3 and 4 do). */
static int has_verdict(int m)
{
	return m >= 2;
}

static uint32_t verdict_of(const struct handshake *h, int m)
{
	return bytes_get_be32(h->wire + MSG_OFF[m]);
}

static void greeting_encode(struct handshake *h, int m)
{
	unsigned char *p = h->wire + MSG_OFF[m];

	memcpy(p, GREETING_MAGIC, sizeof(GREETING_MAGIC));
	bytes_put_be32(p + 8, HANDSHAKE_PROTOCOL);
	bytes_put_be32(p + 12, keyed(h) ? FLAG_KEYED : 0);
	memcpy(p + 16, h->nonce, HANDSHAKE_NONCE_BYTES);
}

/* What the job is, and nothing of it unless the peer proved the key. */
static void hello_encode(unsigned char *p, const struct hello *me)
{
	bytes_put_be32(p, me->world);
	bytes_put_be32(p + 4, me->rank);
	bytes_put_be32(p + 8, me->batch_size);
	bytes_put_be64(p + 12, me->job_hash);
	bytes_put_be64(p + 20, me->arch_hash);
	bytes_put_be64(p + 28, me->seed);
	bytes_put_be64(p + 36, bytes_f64_bits(me->learning_rate));
	bytes_put_be64(p + 44, bytes_f64_bits(me->momentum));
	bytes_put_be32(p + 52, me->optimizer);
	bytes_put_be32(p + 56, me->epochs);
	bytes_put_be64(p + 60, me->steps_per_epoch);
	bytes_put_be32(p + 68, me->collective);
}

static void hello_decode(struct hello *out, const unsigned char *p, uint32_t protocol)
{
	*out = (struct hello){
	    .protocol = protocol,
	    .world = bytes_get_be32(p),
	    .rank = bytes_get_be32(p + 4),
	    .batch_size = bytes_get_be32(p + 8),
	    .job_hash = bytes_get_be64(p + 12),
	    .arch_hash = bytes_get_be64(p + 20),
	    .seed = bytes_get_be64(p + 28),
	    .learning_rate = bytes_bits_f64(bytes_get_be64(p + 36)),
	    .momentum = bytes_bits_f64(bytes_get_be64(p + 44)),
	    .optimizer = bytes_get_be32(p + 52),
	    .epochs = bytes_get_be32(p + 56),
	    .steps_per_epoch = bytes_get_be64(p + 60),
	    .collective = bytes_get_be32(p + 68),
	};
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

/* Seals message m, which this side sends: its MAC, or zeros without a key. */
static void seal(struct handshake *h, int m)
{
	if (keyed(h))
		mac(h, h->role == HANDSHAKE_CONNECT ? LABEL_CONNECT : LABEL_ACCEPT, MAC_AT(m),
		    h->wire + MAC_AT(m));
	else
		memset(h->wire + MAC_AT(m), 0, HANDSHAKE_MAC_BYTES);
}

/* Checks the MAC of message m, received, when both sides have a key; one
 * that does not verify clears macs_ok for good. */
static void check_seal(struct handshake *h, int m)
{
	unsigned char want[HANDSHAKE_MAC_BYTES];

	if (!keyed(h) || !h->peer_keyed)
		return;
	mac(h, h->role == HANDSHAKE_CONNECT ? LABEL_ACCEPT : LABEL_CONNECT, MAC_AT(m), want);
	if (CRYPTO_memcmp(want, h->wire + MAC_AT(m), HANDSHAKE_MAC_BYTES) != 0)
		h->macs_ok = 0;
}

/* Writes this side's verdict into message m, with its hello when the peer
 * has proved itself (own is not UNAUTHENTICATED) and m carries one, and
 * seals it. */
static void verdict_encode(struct handshake *h, int m)
{
	unsigned char *p = h->wire + MSG_OFF[m];

	bytes_put_be32(p, h->own);
	memset(p + 4, 0, HANDSHAKE_REASON_BYTES);
	snprintf((char *)p + 4, HANDSHAKE_REASON_BYTES, "%s",
	         h->own == VERDICT_OK ? "" : h->own_why);
	if (m < DONE - 1) {
		memset(h->wire + HELLO_AT(m), 0, HANDSHAKE_HELLO_BYTES);
		if (h->own != VERDICT_UNAUTHENTICATED)
			hello_encode(h->wire + HELLO_AT(m), &h->me);
	}
	seal(h, m);
}

/* Reads the peer's verdict in message m into theirs (the first refusal
 * stays). Returns -1 for a status that is no verdict. */
static int verdict_decode(struct handshake *h, int m)
{
	const unsigned char *p = h->wire + MSG_OFF[m];
	uint32_t status = bytes_get_be32(p);

	if (status >= VERDICT_CODES)
		return -1;
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

/* This side's verdict on the key: before the configuration, since nothing
 * of the job is shown, and no refusal means anything, until the peer has
 * proved itself. */
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

/* This side's verdict on the peer's hello in message m, which the peer
 * sent only because this side proved itself: the configuration. */
static void judge_hello(struct handshake *h, int m)
{
	char why[ERR_LEN];

	if (h->own != VERDICT_OK)
		return;
	hello_decode(&h->peer, h->wire + HELLO_AT(m), h->peer_protocol);
	h->have_peer = 1;
	if (handshake_check(&h->me, &h->peer, h->want_rank, why) < 0) {
		h->own = VERDICT_REFUSED;
		/* The reason travels in a field of its own size. */
		snprintf(h->own_why, sizeof(h->own_why), "%.*s", (int)sizeof(h->own_why) - 1, why);
	}
}

static void finish(struct handshake *h, enum handshake_status status, const char *why)
{
	h->status = status;
	h->msg = DONE;
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
 * went is the one to report: the connecting side's verdict on the key
 * first, then the accepting side's judgement of the connecting side's
 * hello, which is the first refusal of a configuration either hears. */
static void conclude(struct handshake *h)
{
	h->authenticated = keyed(h) && h->peer_keyed && h->macs_ok;
	if (h->own == VERDICT_UNAUTHENTICATED) {
		finish(h, HANDSHAKE_UNAUTHENTICATED, h->own_why);
		return;
	}
	/* A verdict that never went (the final one, at times) reads as OK. */
	for (int m = 2; m < DONE; m++) {
		uint32_t v = verdict_of(h, m);
		if (v != VERDICT_OK) {
			h->by_peer = !sends(h, m);
			finish(h, status_of(v), h->by_peer ? h->their_why : h->own_why);
			return;
		}
	}
	finish(h, HANDSHAKE_OK, "");
}

/* Reads the peer's greeting in message m. Returns -1 (finished, BAD) if it
 * is not one, or of another protocol: neither can be spoken to. */
static int take_greeting(struct handshake *h, int m)
{
	const unsigned char *p = h->wire + MSG_OFF[m];
	char why[ERR_LEN];

	if (memcmp(p, GREETING_MAGIC, sizeof(GREETING_MAGIC)) != 0) {
		finish(h, HANDSHAKE_BAD, "not an mwj worker (bad greeting)");
		return -1;
	}
	h->peer_protocol = bytes_get_be32(p + 8);
	if (h->peer_protocol != HANDSHAKE_PROTOCOL) {
		snprintf(why, sizeof(why),
		         "protocol version differs: peer %u, this worker %u (every worker of a job "
		         "must run the same mwj-worker release)",
		         h->peer_protocol, HANDSHAKE_PROTOCOL);
		finish(h, HANDSHAKE_BAD, why);
		return -1;
	}
	h->peer_keyed = (bytes_get_be32(p + 12) & FLAG_KEYED) != 0;
	return 0;
}

/* Whether the message after m goes at all: after a refusal both sides
 * already know the outcome, each having what it needs to believe the
 * other, and end there. */
static int next_expected(const struct handshake *h, int m)
{
	return !has_verdict(m) || (m < DONE - 1 && verdict_of(h, m) == VERDICT_OK);
}

/* Acts on message m, now whole: reads what came, and prepares what goes
 * next. */
static void on_message(struct handshake *h, int m)
{
	int received = !sends(h, m);

	if (received && m <= 1 && take_greeting(h, m) < 0)
		return;
	if (received && m >= 1)
		check_seal(h, m);
	if (received && has_verdict(m) && verdict_decode(h, m) < 0) {
		finish(h, HANDSHAKE_BAD, "bad handshake: not a verdict");
		return;
	}
	if (received && m >= 1)
		recheck_key(h);
	if (!next_expected(h, m)) {
		conclude(h);
		return;
	}
	if (!received)
		return;
	switch (m) {
	case 0: /* accepting: our greeting, proving the key over both nonces */
		greeting_encode(h, 1);
		seal(h, 1);
		break;
	case 1: /* connecting: our verdict on the proof, and our hello if it held */
	case 2: /* accepting: the same, and our verdict on the connecting hello */
	case 3: /* connecting: our verdict on the accepting hello */
		if (m >= 2)
			judge_hello(h, m);
		verdict_encode(h, m + 1);
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
		greeting_encode(h, 0);
}

enum handshake_io handshake_io(struct handshake *h, unsigned char **buf, size_t *len)
{
	if (h->msg >= DONE)
		return HANDSHAKE_DONE;
	*buf = h->wire + MSG_OFF[h->msg] + h->off;
	*len = MSG_OFF[h->msg + 1] - MSG_OFF[h->msg] - h->off;
	return sends(h, h->msg) ? HANDSHAKE_SEND : HANDSHAKE_RECV;
}

void handshake_moved(struct handshake *h, size_t n)
{
	if (h->msg >= DONE)
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
	int m = h->msg < DONE ? h->msg : DONE - 1;

	snprintf(out, n, "%zu of %zu bytes of the %s", h->msg < DONE ? h->off : 0,
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
