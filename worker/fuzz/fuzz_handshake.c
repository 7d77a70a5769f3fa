/* fuzz_handshake.c - a libFuzzer target for the ring handshake's decoders
 * (handshake.h): whatever a peer sends, in whatever pieces, the handshake
 * must end cleanly or wait for more, never read or write out of bounds, and
 * never accept what it must not.
 *
 * Input: byte 0 picks the mode, byte 1 the size of the pieces bytes arrive
 * in (0: 256), the rest drives the peer.
 *   mode bit 0  this side connects (else it accepts)
 *   mode bit 1  this side has the key
 *   mode bit 3  man in the middle: a real peer runs (bit 2: it has the key;
 *               bit 4: it runs another model), and the rest is a list of
 *               (2-byte offset, 1-byte xor) applied to what it sends;
 *               otherwise the rest is the peer's byte stream itself.
 * Checked: a finished handshake has a known status and a terminated reason;
 * with a key, OK or REFUSED only for a peer that proved the key; a peer
 * whose bytes were altered in flight is never accepted with a key; an
 * unaltered peer of the same job and key is always accepted.
 *
 * `make fuzz` runs it under libFuzzer; `make test` replays the seed corpus
 * (worker/fuzz/corpus/handshake) through replay.c.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz/harness.h"
#include "handshake.h"

#define MODE_CONNECT     1
#define MODE_KEYED       2
#define MODE_PEER_KEYED  4
#define MODE_MITM        8
#define MODE_OTHER_MODEL 16

static const struct hello BASE = {HANDSHAKE_PROTOCOL,   2, 0, 11, 22, 42, 64, 0, 3, 0, 0.001, 0.0,
                                  HELLO_COLLECTIVE_HOST};

static void init_key(struct job_key *k)
{
	k->len = 32;
	for (size_t i = 0; i < k->len; i++)
		k->bytes[i] = (unsigned char)(i * 13 + 1);
}

static void check_outcome(const struct handshake *h, int keyed)
{
	unsigned char *buf;
	size_t len;

	if (handshake_io((struct handshake *)h, &buf, &len) != HANDSHAKE_DONE) {
		FUZZ_CHECK(h->status == HANDSHAKE_PENDING);
		return;
	}
	FUZZ_CHECK(h->status == HANDSHAKE_OK || h->status == HANDSHAKE_REFUSED ||
	           h->status == HANDSHAKE_UNAUTHENTICATED || h->status == HANDSHAKE_BAD);
	FUZZ_CHECK(memchr(h->why, '\0', sizeof(h->why)) != NULL);
	if (h->status == HANDSHAKE_OK)
		FUZZ_CHECK(h->why[0] == '\0');
	if (keyed && (h->status == HANDSHAKE_OK || h->status == HANDSHAKE_REFUSED))
		FUZZ_CHECK(h->authenticated);
	if (!keyed)
		FUZZ_CHECK(!h->authenticated);
}

/* Mode A: data is everything the peer sends. */
static void raw_peer(struct handshake *h, const uint8_t *data, size_t size, size_t chunk)
{
	size_t at = 0;

	for (;;) {
		unsigned char *buf;
		size_t len;
		enum handshake_io io = handshake_io(h, &buf, &len);
		if (io == HANDSHAKE_DONE)
			return;
		if (io == HANDSHAKE_SEND) {
			handshake_moved(h, len);
			continue;
		}
		size_t n = size - at < len ? size - at : len;
		n = n < chunk ? n : chunk;
		if (n == 0)
			return; /* the peer has nothing more to say */
		memcpy(buf, data + at, n);
		handshake_moved(h, n);
		at += n;
	}
}

/* Mode B: a real peer, its bytes altered by (offset, xor) pairs. Returns
 * whether any byte that h received was changed. */
static int mitm_peer(struct handshake *h, struct handshake *peer, const uint8_t *edits,
                     size_t nedits, size_t chunk)
{
	size_t sent = 0; /* bytes the peer has sent so far */
	int altered = 0;

	for (int turns = 0; turns < 10000; turns++) {
		unsigned char *out, *in;
		size_t nout, nin;
		if (handshake_io(h, &out, &nout) == HANDSHAKE_SEND) {
			if (handshake_io(peer, &in, &nin) != HANDSHAKE_RECV) {
				handshake_moved(h, nout); /* the peer hung up: into the void */
				continue;
			}
			size_t n = nout < nin ? nout : nin;
			memcpy(in, out, n);
			handshake_moved(h, n);
			handshake_moved(peer, n);
			continue;
		}
		if (handshake_io(peer, &out, &nout) != HANDSHAKE_SEND)
			return altered;
		if (handshake_io(h, &in, &nin) != HANDSHAKE_RECV)
			return altered;
		size_t n = nout < nin ? nout : nin;
		n = n < chunk ? n : chunk;
		memcpy(in, out, n);
		for (size_t e = 0; e + 3 <= nedits; e += 3) {
			size_t off = (size_t)edits[e] << 8 | edits[e + 1];
			if (off >= sent && off < sent + n)
				in[off - sent] ^= edits[e + 2];
		}
		/* Edits may cancel out: what counts is what arrives. */
		altered |= memcmp(in, out, n) != 0;
		handshake_moved(h, n);
		handshake_moved(peer, n);
		sent += n;
	}
	return altered;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct handshake h, peer;
	struct job_key key;
	struct hello me = BASE, them = BASE;
	size_t chunk;
	int mode, keyed;

	if (size < 2)
		return 0;
	mode = data[0];
	chunk = data[1] ? data[1] : 256;
	keyed = (mode & MODE_KEYED) != 0;
	init_key(&key);
	/* The connecting side is rank 0, the accepting one rank 1. */
	me.rank = (mode & MODE_CONNECT) ? 0 : 1;
	them.rank = 1 - me.rank;
	if (mode & MODE_OTHER_MODEL)
		them.arch_hash++;
	handshake_init(&h, (mode & MODE_CONNECT) ? HANDSHAKE_CONNECT : HANDSHAKE_ACCEPT, &me,
	               keyed ? &key : NULL, them.rank);
	if (!(mode & MODE_MITM)) {
		raw_peer(&h, data + 2, size - 2, chunk);
		check_outcome(&h, keyed);
		return 0;
	}
	handshake_init(&peer, (mode & MODE_CONNECT) ? HANDSHAKE_ACCEPT : HANDSHAKE_CONNECT, &them,
	               (mode & MODE_PEER_KEYED) ? &key : NULL, me.rank);
	int altered = mitm_peer(&h, &peer, data + 2, size - 2, chunk);
	check_outcome(&h, keyed);
	check_outcome(&peer, (mode & MODE_PEER_KEYED) != 0);
	if (keyed && altered)
		FUZZ_CHECK(h.status != HANDSHAKE_OK);
	int same_key = keyed == ((mode & MODE_PEER_KEYED) != 0);
	if (!altered && same_key && !(mode & MODE_OTHER_MODEL)) {
		unsigned char *buf;
		size_t len;
		FUZZ_CHECK(handshake_io(&h, &buf, &len) == HANDSHAKE_DONE);
		FUZZ_CHECK(h.status == HANDSHAKE_OK && peer.status == HANDSHAKE_OK);
	}
	return 0;
}
