/* hlc_dispatch.h: what every dispatch module hlc generates shares.
 *
 * The functions its cost models call (besides <math.h>), the integer
 * searches that choose parameters, and bitwidth() of an integer array.  A
 * module's models and decisions (decisions_<library>.c) include it first,
 * after defining HLC_SCAN_LIMIT and HLC_COARSE from hlc.optimize's
 * SCAN_LIMIT and COARSE, which brings in the searches; its Cython includes
 * it for bitwidth().  Each search
 * mirrors the Python in hlc.optimize, step by step, so that the compiled
 * module and hlc.dispatch.reference decide alike.
 */
#ifndef HLC_DISPATCH_H
#define HLC_DISPATCH_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* a mod b with the sign of b, as Python's % (the description language's). */
static inline double hlc_mod(double a, double b) {
    double r = fmod(a, b);
    return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r;
}

/* fmin and fmax, inline: the C library's are calls (they keep a number
 * over a NaN, as these do), and a decision evaluates dozens of them. */
static inline double hlc_min(double a, double b) {
    return (a < b || b != b) ? a : b;
}

static inline double hlc_max(double a, double b) {
    return (a > b || b != b) ? a : b;
}

/* A prediction that is not a number counts as never fastest. */
static inline double hlc_finite(double value) {
    return isfinite(value) ? value : INFINITY;
}

/* A predicted time as a decision ranks it.  One that is not a positive
 * number ranks behind every positive time, as HLC_NO_TIME: a model's
 * corrections (a step down in a per-key cost, say) may sum below zero where
 * its samples never reached, and such a time would win every comparison.
 * It still ranks ahead of infinity (no model, or one that is not a number
 * here): where no implementation predicts a positive time, the first that
 * applies runs, since the call is valid.  An objective (a root sought, a
 * difference of times) may be negative, and goes through hlc_finite only. */
#define HLC_NO_TIME DBL_MAX

static inline double hlc_time(double value) {
    if (!isfinite(value)) return INFINITY;
    return value > 0.0 ? value : HLC_NO_TIME;
}

/* The time a decision plans for: the prediction plus its weighed typical
 * deviations, ranked no better than the prediction (a prediction that is
 * not a positive time, or not a number, ranks as it does); the prediction,
 * as ranked, goes where predicted points. */
static inline double hlc_planned(double seconds, double deviation, double *predicted) {
    double planned = hlc_time(seconds + deviation);
    *predicted = hlc_time(seconds);
    return *predicted >= HLC_NO_TIME && *predicted > planned ? *predicted : planned;
}

/* A ranked time as predictions are reported: infinity for HLC_NO_TIME. */
static inline double hlc_shown(double value) {
    return value >= HLC_NO_TIME ? INFINITY : value;
}

/* 2 ** x: built from its bits at a whole exponent (the bins of a digit, a
 * block of 2 ** block), exp2 elsewhere.  A decision's searches evaluate it
 * at every candidate, and exp2 is a call into the C library. */
static inline double hlc_exp2(double x) {
    if (x >= -1022.0 && x <= 1023.0 && (double)(long)x == x) {
        uint64_t bits = (uint64_t)((long)x + 1023) << 52;
        double value;
        memcpy(&value, &bits, sizeof value);
        return value;
    }
    return exp2(x);
}

/* log2(x): the exponent of a positive power of two read from its bits,
 * log2 elsewhere (the same value: the C library's log2 is exact there).
 * Models take log2 of 2 ** digit counters or 2 ** width values at every
 * candidate of a search, and log2 is a call into the C library: a sort
 * module's decision took 0.50-0.64 us with it, 0.54-0.72 us without. */
static inline double hlc_log2(double x) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x000fffffffffffffULL) == 0 && (bits >> 52) - 1 < 0x7fe)  /* positive, normal, no fraction */
        return (double)((long)(bits >> 52) - 1023);
    return log2(x);
}

static inline long hlc_clamp(long value, long lo, long hi) {
    return value < lo ? lo : (value > hi ? hi : value);
}

#ifdef HLC_SCAN_LIMIT
typedef double (*hlc_objective)(long, void *);

/* The searches are inlined into each parameter's choice, where the
 * objective they call is known: the compiler then calls it directly, and
 * may inline it too (a vector library's decision took 8% less). */
#if defined(__GNUC__)
#  define HLC_SEARCH static inline __attribute__((always_inline))
#else
#  define HLC_SEARCH static inline
#endif

/* Mirrors hlc.optimize.spread: the j-th of HLC_COARSE values evenly spread over [lo, hi]. */
static inline long hlc_spread(long lo, long hi, long j) {
    long whole = (hi - lo) / (HLC_COARSE - 1), part = (hi - lo) % (HLC_COARSE - 1);
    return lo + whole * j + part * j / (HLC_COARSE - 1);
}

/* Mirrors hlc.optimize.integer_minimum: a wide range narrowed around the least
   of HLC_COARSE spread values until it is short, then every value of it.  The
   least value goes where least points (if it does): a decision whose search
   minimized the very time it ranks by need not value it again. */
HLC_SEARCH long hlc_integer_minimum(hlc_objective f, long lo, long hi, void *state, double *least_out) {
    long best, x, j, at;
    double least, value;
    while (hi - lo >= HLC_SCAN_LIMIT) {
        at = 0;
        least = f(lo, state);
        for (j = 1; j < HLC_COARSE; j++) {
            value = f(hlc_spread(lo, hi, j), state);
            if (value < least) { at = j; least = value; }
        }
        x = hlc_spread(lo, hi, at > 0 ? at - 1 : 0);
        hi = hlc_spread(lo, hi, at < HLC_COARSE - 1 ? at + 1 : HLC_COARSE - 1);
        lo = x;
    }
    best = lo;
    least = f(lo, state);
    for (x = lo + 1; x <= hi; x++) {
        value = f(x, state);
        if (value < least) { best = x; least = value; }
    }
    if (least_out) *least_out = least;
    return best;
}

/* The most values a search weighs at once: the whole of a short range, or
 * the spread values of a wide one. */
#define HLC_BATCH (HLC_SCAN_LIMIT > HLC_COARSE ? HLC_SCAN_LIMIT : HLC_COARSE)

/* An objective valued at count values at once (count <= HLC_BATCH), into values[]. */
typedef void (*hlc_objectives)(const long *at, long count, void *state, double *values);

/* hlc_integer_minimum, with the objective valued at all the values each
 * step compares at once: the same values, compared in the same order, so
 * the same choice.  A model valued at one value after another makes each
 * value's divisions and logarithms wait for the last's; valued a step at a
 * time over all of them (the sums of hlc_sums_*), they run side by side: a
 * vector library's decision, six values of 2 ** block, took 40-70 ns so
 * where it took 67-130 ns. */
HLC_SEARCH long hlc_integer_minimum_of(hlc_objectives f, long lo, long hi, void *state, double *least_out) {
    long at[HLC_BATCH], best, j, count;
    double values[HLC_BATCH], least;
    while (hi - lo >= HLC_SCAN_LIMIT) {
        for (j = 0; j < HLC_COARSE; j++) at[j] = hlc_spread(lo, hi, j);
        f(at, HLC_COARSE, state, values);
        best = 0;
        least = values[0];
        for (j = 1; j < HLC_COARSE; j++)
            if (values[j] < least) { best = j; least = values[j]; }
        j = hlc_spread(lo, hi, best > 0 ? best - 1 : 0);
        hi = hlc_spread(lo, hi, best < HLC_COARSE - 1 ? best + 1 : HLC_COARSE - 1);
        lo = j;
    }
    count = hi - lo + 1;
    for (j = 0; j < count; j++) at[j] = lo + j;
    f(at, count, state, values);
    best = 0;
    least = values[0];
    for (j = 1; j < count; j++)
        if (values[j] < least) { best = j; least = values[j]; }
    if (least_out) *least_out = least;
    return lo + best;
}

/* Mirrors hlc.optimize.integer_root: the integer before the sign change;
   lo - 1 / hi + 1 when f is negative / positive at both ends. */
HLC_SEARCH long hlc_integer_root(hlc_objective f, long lo, long hi, void *state) {
    double f_lo = f(lo, state), f_hi, f_middle;
    int negative_at_lo;
    if (f_lo == 0.0) return lo;
    f_hi = f(hi, state);
    if (f_hi == 0.0) return hi;
    if ((f_lo < 0.0) == (f_hi < 0.0)) return f_lo < 0.0 ? lo - 1 : hi + 1;
    negative_at_lo = f_lo < 0.0;
    while (hi - lo > 1) {
        long middle = lo + (hi - lo) / 2;
        f_middle = f(middle, state);
        if (f_middle == 0.0) return middle;
        if ((f_middle < 0.0) == negative_at_lo) lo = middle;
        else hi = middle;
    }
    return lo;
}
#endif /* HLC_SCAN_LIMIT */

#ifdef Py_PYTHON_H
/* bitwidth() of an integer array in one pass: the bits of max - min; the
   smallest and largest values come back too (hlc.runtime.extremes).
   Where the compiler can, the loop is built for several instruction sets
   and the loader picks this CPU's (x86 lacks 64-bit min/max before
   AVX-512, so the baseline build runs a compare per element). */
#if defined(__x86_64__) && defined(__has_attribute)
#  if __has_attribute(target_clones)
#    define HLC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#    define HLC_SPAN_VECTORIZED 1
#  endif
#endif
#ifndef HLC_CLONES
#  define HLC_CLONES
#  define HLC_SPAN_VECTORIZED 0
#endif
#define HLC_SPAN(name, type)                                              \
HLC_CLONES static int name(const void *data, Py_ssize_t n,               \
                           unsigned long long *low, unsigned long long *high) { \
    const type *v = (const type *)data;                                  \
    type lo = v[0], hi = v[0];                                           \
    for (Py_ssize_t i = 1; i < n; i++) {                                 \
        lo = v[i] < lo ? v[i] : lo;                                      \
        hi = v[i] > hi ? v[i] : hi;                                      \
    }                                                                    \
    *low = (unsigned long long)lo;  /* sign-extended for signed types */ \
    *high = (unsigned long long)hi;                                      \
    unsigned long long span = (unsigned long long)hi - (unsigned long long)lo; \
    return span ? 64 - __builtin_clzll(span) : 0;                        \
}
HLC_SPAN(hlc_span_i8, signed char)
HLC_SPAN(hlc_span_i16, short)
HLC_SPAN(hlc_span_i32, int)
HLC_SPAN(hlc_span_i64, long long)
HLC_SPAN(hlc_span_u8, unsigned char)
HLC_SPAN(hlc_span_u16, unsigned short)
HLC_SPAN(hlc_span_u32, unsigned int)
HLC_SPAN(hlc_span_u64, unsigned long long)
#endif /* Py_PYTHON_H */

#endif /* HLC_DISPATCH_H */
