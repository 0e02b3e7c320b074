#include "util/base64.h"

#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "util/xalloc.h"

char *base64_encode(const void *data, size_t len)
{
	char *out = xmalloc(4 * ((len + 2) / 3) + 1);
	EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	return out;
}

static bool base64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

char *base64_decode(const char *text, size_t *len)
{
	size_t n = strlen(text);
	if (n % 4 || n > (size_t)1 << 30)
		return NULL;
	/* EVP_DecodeBlock skips surrounding whitespace and counts padding as zero bytes: both checked here. */
	size_t pad = n && text[n - 1] == '=' ? (n > 1 && text[n - 2] == '=' ? 2 : 1) : 0;
	for (size_t i = 0; i < n - pad; i++)
		if (!base64_char(text[i]))
			return NULL;
	size_t size = n / 4 * 3 + 1;
	char *out = xmalloc(size);
	int got = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)text, (int)n);
	if (got < 0 || (size_t)got < pad) {
		OPENSSL_cleanse(out, size); /* it may be a key */
		free(out);
		return NULL;
	}
	*len = (size_t)got - pad;
	out[*len] = '\0';
	return out;
}
