/*
 * Standard base64 (RFC 4648, padded), as Kubernetes writes []byte fields
 * (Secret data, caBundle). Over OpenSSL's EVP_EncodeBlock/DecodeBlock.
 */
#ifndef SOP_UTIL_BASE64_H
#define SOP_UTIL_BASE64_H

#include <stddef.h>

/* The base64 of len bytes of data: a new string. */
char *base64_encode(const void *data, size_t len);

/*
 * The bytes of text (padded base64: only the standard alphabet, '=' only
 * as the last one or two characters, no whitespace): a new buffer, NUL-
 * terminated past its *len bytes, or NULL when text is not base64.
 */
char *base64_decode(const char *text, size_t *len);

#endif
