/* The platform's `long double`, as Redis computes INCRBYFLOAT and
 * HINCRBYFLOAT (80-bit x87 on x86-64, IEEE quad on aarch64): parsing as
 * Redis's string2ld, addition, and Redis's ld2string(LD_STR_HUMAN).
 * Values cross the FFI boundary by pointer (Rust has no long double type). */

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Redis's MAX_LONG_DOUBLE_CHARS: the longest %.17Lf of a finite value fits. */
#define KEEL_LD_CHARS (5 * 1024)

/* Redis's string2ld: the whole string (no leading space) must be a number
 * strtold reads; NaN and out-of-range values are refused. */
int keel_string2ld(const char *s, size_t slen, long double *dp) {
    char buf[KEEL_LD_CHARS];
    long double value;
    char *eptr;

    if (slen == 0 || slen >= sizeof(buf)) return 0;
    memcpy(buf, s, slen);
    buf[slen] = '\0';
    errno = 0;
    value = strtold(buf, &eptr);
    /* The whole string: a NUL inside it ends strtold's number early. */
    if (isspace((unsigned char)buf[0]) || eptr[0] != '\0' ||
        (size_t)(eptr - buf) != slen ||
        ((errno == ERANGE) &&
         (value == HUGE_VALL || value == -HUGE_VALL || fpclassify(value) == FP_ZERO)) ||
        errno == EINVAL || isnan(value))
        return 0;
    *dp = value;
    return 1;
}

void keel_ld_from_i64(long long n, long double *out) { *out = (long double)n; }

void keel_ld_add(const long double *a, const long double *b, long double *out) { *out = *a + *b; }

int keel_ld_is_finite(const long double *v) { return isfinite(*v) ? 1 : 0; }

/* Redis's ld2string(LD_STR_HUMAN): %.17Lf, trailing zeros (and a bare
 * point) removed, "-0" written "0". Returns the length written into buf
 * (KEEL_LD_CHARS bytes), 0 if it does not fit. */
size_t keel_ld2string_human(const long double *vp, char *buf) {
    long double value = *vp;
    size_t len = KEEL_LD_CHARS;
    int l;

    if (isinf(value)) {
        l = value > 0 ? 3 : 4;
        memcpy(buf, value > 0 ? "inf" : "-inf", (size_t)l);
        return (size_t)l;
    }
    if (isnan(value)) {
        memcpy(buf, "nan", 3);
        return 3;
    }
    l = snprintf(buf, len, "%.17Lf", value);
    if (l < 0 || (size_t)l + 1 > len) return 0;
    if (strchr(buf, '.') != NULL) {
        char *p = buf + l - 1;
        while (*p == '0') {
            p--;
            l--;
        }
        if (*p == '.') l--;
    }
    if (l == 2 && buf[0] == '-' && buf[1] == '0') {
        buf[0] = '0';
        l = 1;
    }
    return (size_t)l;
}

/* A double widened to long double, as Redis's addReplyHumanLongDouble
 * receives GEOPOS/WITHCOORD coordinates. */
void keel_ld_from_double(double d, long double *out) { *out = (long double)d; }

/* printf's "%.*f" of a double (GEODIST's "%.4f", the "%f" of GEOADD's
 * error), for C's rounding and inf/nan spelling. Returns the length, 0 if
 * it does not fit in `len` bytes. */
size_t keel_fmt_fixed(double v, int prec, char *buf, size_t len) {
    int l = snprintf(buf, len, "%.*f", prec, v);
    if (l < 0 || (size_t)l + 1 > len) return 0;
    return (size_t)l;
}
