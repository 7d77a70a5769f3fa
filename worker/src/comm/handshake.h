/* handshake.h - the ring's connection handshake: who is at the other end of
 * a new connection, whether it belongs to the same job and runs the same
 * model, and, when the job has a key (job_key.h), that it holds the key.
 *
 * The worker that connects (to the next rank) and the worker that accepts
 * (from the previous rank) trade five fixed-size messages:
 *
 *   connect -> accept  GREETING             protocol, a key or not, a fresh nonce
 *   accept -> connect  GREETING + MAC       the same, and its proof of the key
 *   connect -> accept  VERDICT + HELLO + MAC  its verdict on the proof, its proof,
 *                                         and what it runs, if the peer proved
 *   accept -> connect  VERDICT + HELLO + MAC  the same from the other side
 *   connect -> accept  VERDICT + MAC        its verdict on the peer's hello, only
 *                                         if both verdicts so far were OK
 *
 * With a key, a MAC is an HMAC-SHA256 under that key of everything sent
 * before it in both directions, both nonces included, and each side's
 * MACs carry a label of their own. Each side therefore proves it holds the
 * key over a transcript the other side's fresh nonce makes new, so a
 * recorded handshake cannot be replayed; and nothing about the job (world
 * size, rank, job and architecture hashes, seed, batch, epochs, learning
 * rate...) is sent to a peer before it has proved the key: a hello goes
 * only in a message that follows the peer's proof, and is all zeros when
 * the proof failed. A peer's refusal is believed only once the peer has
 * proved itself, and a refusal of the key never ends a worker. Without a
 * key on either side the MACs are zero and ignored, and the hellos go in
 * the clear (the ring is then not authenticated at all). The key never
 * travels and is never named in a reason.
 *
 * Protocol 4; 3 sent the hello first, to anyone. A peer of another
 * protocol is dropped at its greeting, naming both versions.
 *
 * This file is pure: no sockets, no clock. The caller moves the bytes that
 * handshake_io() asks for and reports them with handshake_moved(), so a
 * poll loop can run many handshakes at once and a fuzzer can feed one.
 * Only what comes after the handshake, the ring's data, is unauthenticated.
 */
#ifndef MWJ_HANDSHAKE_H
#define MWJ_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "job_key.h"

#define HANDSHAKE_PROTOCOL       4
#define HANDSHAKE_NONCE_BYTES    32
#define HANDSHAKE_MAC_BYTES      32
#define HANDSHAKE_REASON_BYTES   256
#define HANDSHAKE_GREETING_BYTES (16 + HANDSHAKE_NONCE_BYTES)
#define HANDSHAKE_HELLO_BYTES    72
#define HANDSHAKE_STATUS_BYTES   (4 + HANDSHAKE_REASON_BYTES)
/* The five messages, back to back: the transcript the MACs cover. */
#define HANDSHAKE_MESSAGES 5
#define HANDSHAKE_WIRE_BYTES                                                                       \
	(2 * HANDSHAKE_GREETING_BYTES + 3 * HANDSHAKE_STATUS_BYTES + 2 * HANDSHAKE_HELLO_BYTES +   \
	 4 * HANDSHAKE_MAC_BYTES)

/* What must agree across the ring. */
struct hello {
	uint32_t protocol, world, rank;
	uint64_t job_hash;  /* the job's name and its cluster addresses */
	uint64_t arch_hash; /* the model architecture (model.h) */
	uint64_t seed;
	uint32_t batch_size, optimizer, epochs;
	uint64_t steps_per_epoch; /* as given; 0: one pass */
	double learning_rate, momentum;
	uint32_t collective; /* how gradients are summed: HELLO_COLLECTIVE_* */
};

/* hello.collective: every worker of a ring must sum the same way, for the
 * ring carries a different sequence of collectives for each. */
#define HELLO_COLLECTIVE_HOST     0 /* over the ring, in the CPU reducer's buckets */
#define HELLO_COLLECTIVE_NCCL     1 /* NCCL on the GPUs, set up over the ring */
#define HELLO_COLLECTIVE_HOST_GPU 2 /* over the ring, a GPU's gradient at once */

enum handshake_role { HANDSHAKE_CONNECT, HANDSHAKE_ACCEPT };

enum handshake_status {
	HANDSHAKE_PENDING,         /* under way */
	HANDSHAKE_OK,              /* each side accepted the other */
	HANDSHAKE_REFUSED,         /* configurations differ: permanent */
	HANDSHAKE_UNAUTHENTICATED, /* a key missing on one side, or the keys differ */
	HANDSHAKE_BAD,             /* not an mwj worker of this protocol */
};

enum handshake_io { HANDSHAKE_SEND, HANDSHAKE_RECV, HANDSHAKE_DONE };

struct handshake {
	enum handshake_role role;
	struct hello me;
	const struct job_key *key; /* NULL or empty: no key */
	uint32_t want_rank;        /* the rank the peer must be */
	int msg;                   /* the message under way, 0 to 4; 5 when done */
	size_t off;                /* its bytes moved so far */
	unsigned char nonce[HANDSHAKE_NONCE_BYTES];
	unsigned char wire[HANDSHAKE_WIRE_BYTES];
	uint32_t own, theirs; /* the verdicts so far, on the wire's codes */
	char own_why[HANDSHAKE_REASON_BYTES], their_why[HANDSHAKE_REASON_BYTES];
	uint32_t peer_protocol; /* from the peer's greeting */
	int peer_keyed;         /* the peer's greeting says it has a key */
	int macs_ok;            /* every MAC of the peer's so far verified */

	/* The outcome, once handshake_io() returns HANDSHAKE_DONE. */
	enum handshake_status status;
	int by_peer;       /* status is the peer's verdict on this worker */
	int authenticated; /* both hold the key, and the peer proved it */
	int have_peer;     /* peer holds the peer's decoded hello */
	struct hello peer;
	char why[ERR_LEN]; /* what went wrong, "" when OK */
};

/* --- Running one handshake --- */

/* Starts a handshake as role, for this worker's hello me, with key (NULL or
 * empty for none), expecting the peer to be want_rank. key must outlive h. */
void handshake_init(struct handshake *h, enum handshake_role role, const struct hello *me,
                    const struct job_key *key, uint32_t want_rank);

/* What to do next: HANDSHAKE_SEND the *len bytes at *buf, or HANDSHAKE_RECV
 * up to *len bytes into *buf (never more: the ring's data follow), or
 * HANDSHAKE_DONE, when status holds the outcome. The buffer is inside h. */
enum handshake_io handshake_io(struct handshake *h, unsigned char **buf, size_t *len);

/* Records that the first n bytes of what handshake_io() asked for were
 * sent or received; n must not exceed its *len. */
void handshake_moved(struct handshake *h, size_t n);

/* Names the message under way for errors ("the greeting", "the hello",
 * ...) and says how many of its bytes have moved: "12 of 48 bytes of the
 * greeting". Writes into out (n bytes). */
void handshake_progress(const struct handshake *h, char *out, size_t n);

/* --- The configuration check --- */

/* Checks a peer's hello against this worker's: theirs must come from
 * want_rank. Returns 0, or -1 with the first difference in why (ERR_LEN),
 * e.g. "model differs". */
int handshake_check(const struct hello *mine, const struct hello *theirs, uint32_t want_rank,
                    char *why);

#endif
