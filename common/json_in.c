/* json_in.c - tolerant readers for API objects (json_in.h). */
#include "json_in.h"

#include <string.h>

const char *json_in_str(const cJSON *obj, const char *name)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

void json_in_copy_cut(char *out, size_t n, const char *s)
{
	size_t len;

	if (n == 0)
		return;
	if (s == NULL) {
		out[0] = '\0';
		return;
	}
	len = strlen(s);
	if (len >= n) {
		len = n - 1;
		while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
	}
	if (len > 0)
		memcpy(out, s, len);
	out[len] = '\0';
}
