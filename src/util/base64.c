#include "util/base64.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "util/xalloc.h"

char *base64_encode(const void *data, size_t len)
{
	char *out = xmalloc(4 * ((len + 2) / 3) + 1);
	EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	return out;
}

char *base64_decode(const char *text, size_t *len)
{
	size_t n = strlen(text);
	if (n % 4 || n > (size_t)1 << 30)
		return NULL;
	/* EVP_DecodeBlock skips nothing but counts padding as zero bytes: both checked here. */
	size_t pad = n && text[n - 1] == '=' ? (n > 1 && text[n - 2] == '=' ? 2 : 1) : 0;
	if (strcspn(text, "=") < n - pad)
		return NULL;
	char *out = xmalloc(n / 4 * 3 + 1);
	int got = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)text, (int)n);
	if (got < 0) {
		free(out);
		return NULL;
	}
	*len = (size_t)got - pad;
	out[*len] = '\0';
	return out;
}
