/* http_fixture.h - a canned-response HTTP/1.1 server on 127.0.0.1 for the
 * API client's tests, playing the request/response pairs of a fixture file
 * in order (the idea of curl's tests/data).
 *
 * A fixture file (operator/tests/fixtures/http/<name>) is a list of
 * sections, each opened by a line starting "--- ". Lines before the first
 * section are comments. A section's data is every line after its opening
 * line up to the next one, without the newline before that line.
 *
 *   --- request        what the client must send:
 *   PATCH /api/v1/namespaces/ns/pods/x        the method and path (with query)
 *   Authorization: Bearer tok-1               a header that must be there, as is
 *   !Content-Type                             a header that must not be there
 *                                             (an empty line)
 *   {"metadata":{}}                           the exact body; none: an empty body
 *   --- response       what the server answers:
 *   HTTP/1.1 200 OK                           the status line
 *   Content-Type: application/json            headers, sent as they are
 *                                             (an empty line)
 *   {"kind":"Pod"}                            the body
 *   --- chunk 50       a streamed piece, sent 50 ms later as one HTTP chunk
 *   --- silence 5000   nothing for 5000 ms (or until the client hangs up)
 *   --- close          hang up now, ending the response unfinished
 *
 * The server adds Content-Length unless the response has one, or, when
 * chunks follow, Transfer-Encoding: chunked (the response's own body is
 * then the first chunk) and the final empty chunk. A response with
 * "Connection: close" ends its connection. Connections are kept alive
 * otherwise, and each is served by a thread of its own.
 *
 * A request that differs from its exchange is still answered as scripted;
 * the differences are recorded, for the test to assert that there were
 * none. A request after the last exchange is answered 418 and recorded.
 *
 * Everything here fails the running cmocka test rather than returning an
 * error, so call it from a test body.
 */
#ifndef MWJ_HTTP_FIXTURE_H
#define MWJ_HTTP_FIXTURE_H

struct http_fixture;

/* Reads fixtures/http/<name> (next to this file's source) and starts
 * serving it on an ephemeral port. Stop it with http_fixture_stop. */
struct http_fixture *http_fixture_start(const char *name);

/* Hangs up every connection, stops the threads and frees f. Accepts NULL. */
void http_fixture_stop(struct http_fixture *f);

/* "http://127.0.0.1:<port>", borrowed from f. */
const char *http_fixture_url(const struct http_fixture *f);

/* Connections accepted so far. */
int http_fixture_connections(struct http_fixture *f);

/* Requests received so far, the unexpected ones included. */
int http_fixture_requests(struct http_fixture *f);

/* Every difference between what came and what the fixture expects, one
 * line each ("request 2 (GET /x): header 'Accept' is 'a', expected 'b'"),
 * plus exchanges never asked for; "" when all went as scripted. Borrowed
 * from f until the next call. */
const char *http_fixture_mismatches(struct http_fixture *f);

#endif
