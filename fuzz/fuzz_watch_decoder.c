/*
 * The watch stream decoder (client/watch_decoder.c). The first byte picks
 * where the rest is cut in two reads; the decoder must deliver the same
 * events, with the same outcome, as when the bytes come in one read
 * (its header's promise: "whatever way the bytes were cut into reads").
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/watch_decoder.h"
#include "fuzz_input.h"
#include "util/strbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every event as "type object\n", to compare two decodings. */
static int record(void *ctx, const char *type, json_t *object)
{
	struct strbuf *seen = ctx;
	char *text = json_dumps(object, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
	strbuf_appendf(seen, "%s %s\n", type, text ? text : "?");
	free(text);
	(void)watch_error_code(object);
	return 0;
}

/* Feeds the parts in turn, stopping at the first error, as kube_watch.c does. */
static int decode(const char *text, size_t len, size_t cut, struct strbuf *seen)
{
	struct watch_decoder d;
	char *err = NULL;
	watch_decoder_init(&d);
	int rc = watch_decoder_feed(&d, text, cut, record, seen, &err);
	if (rc == 0)
		rc = watch_decoder_feed(&d, text + cut, len - cut, record, seen, &err);
	FUZZ_CHECK((rc < 0) == (err != NULL), "an error, and only an error, comes with a message");
	free(err);
	watch_decoder_release(&d);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	size_t cut = len ? data[0] % (len + 1) : 0;

	struct strbuf whole, split;
	strbuf_init(&whole, 0);
	strbuf_init(&split, 0);
	int rc_whole = decode(text, len, len, &whole);
	int rc_split = decode(text, len, cut, &split);
	FUZZ_CHECK(rc_whole == rc_split, "one read or two: the same outcome");
	if (rc_whole == 0)
		FUZZ_CHECK(whole.len == split.len && !memcmp(strbuf_str(&whole), strbuf_str(&split), whole.len),
			   "one read or two: the same events");
	strbuf_release(&whole);
	strbuf_release(&split);
	return 0;
}
