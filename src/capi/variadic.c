/*
 * The variadic entry points of libfabric.so.1. Rust cannot define C-variadic
 * functions on a stable toolchain, so these format their arguments and hand
 * a plain string to the Rust core.
 */
#include <stdarg.h>
#include <stdio.h>

struct fi_provider;

void oxfabric_log_emit(const struct fi_provider *prov, unsigned level,
		       unsigned subsys, const char *func, int line,
		       const char *msg);
int oxfabric_param_define(const struct fi_provider *prov, const char *name,
			  unsigned type, const char *help);

__attribute__((visibility("default")))
void fi_log(const struct fi_provider *prov, unsigned level, unsigned subsys,
	    const char *func, int line, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	if (!fmt)
		fmt = "";
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	oxfabric_log_emit(prov, level, subsys, func, line, buf);
}

__attribute__((visibility("default")))
int fi_param_define(const struct fi_provider *prov, const char *param_name,
		    unsigned type, const char *help_string_fmt, ...)
{
	char buf[2048];
	va_list ap;

	buf[0] = '\0';
	if (help_string_fmt) {
		va_start(ap, help_string_fmt);
		vsnprintf(buf, sizeof(buf), help_string_fmt, ap);
		va_end(ap);
	}
	return oxfabric_param_define(prov, param_name, type, buf);
}
