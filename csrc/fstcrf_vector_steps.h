/*
 * fstcrf_vector_steps.h -- private to csrc/fstcrf_update.c, which includes it
 * once per precision of the L-BFGS history with REAL (double or float) and
 * NAME(stem) (the public name of each function) defined: the two-loop
 * recursion over pairs of REAL vectors and the move of double weights along a
 * REAL direction.  Products and sums are in double whatever REAL is; a REAL q
 * is rounded to REAL after each update.  No include guard: it is meant to be
 * read twice.
 */

/* sum of a[i] * b[i] in double */
static double NAME(dot)(const REAL *a, const REAL *b, int64_t n)
{
    double sum = 0.0;
    FC_SIMD_REDUCTION(+, sum)
    for (int64_t i = 0; i < n; ++i) sum += (double)a[i] * (double)b[i];
    return sum;
}

/* q = scale q + a x (x may be NULL: no term), and the dot product of `next` with the
 * new q (0 if next is NULL), in one pass over the vectors. */
static double NAME(update_then_dot)(double scale, double a, const REAL *x, REAL *q, const REAL *next, int64_t n)
{
    double sum = 0.0;
    if (x != NULL && next != NULL) {
        FC_SIMD_REDUCTION(+, sum)
        for (int64_t i = 0; i < n; ++i) {
            q[i] = (REAL)(scale * (double)q[i] + a * (double)x[i]);
            sum += (double)next[i] * (double)q[i];
        }
    } else if (x != NULL) {
        FC_SIMD
        for (int64_t i = 0; i < n; ++i) q[i] = (REAL)(scale * (double)q[i] + a * (double)x[i]);
    } else if (next != NULL) {
        FC_SIMD_REDUCTION(+, sum)
        for (int64_t i = 0; i < n; ++i) {
            q[i] = (REAL)(scale * (double)q[i]);
            sum += (double)next[i] * (double)q[i];
        }
    } else {
        FC_SIMD
        for (int64_t i = 0; i < n; ++i) q[i] = (REAL)(scale * (double)q[i]);
    }
    return sum;
}

void NAME(fu_two_loop)(REAL *const *steps, REAL *const *changes, const double *rho, int32_t m, int64_t D,
                       double *alpha, REAL *q)
{
    if (m == 0) return;
    /* each update is followed by the dot product the next one needs */
    double next = NAME(dot)(steps[m - 1], q, D);
    for (int32_t i = m - 1; i >= 0; --i) {
        alpha[i] = rho[i] * next;
        next = NAME(update_then_dot)(1.0, -alpha[i], changes[i], q, i > 0 ? steps[i - 1] : NULL, D);
    }
    const double gamma = (1.0 / rho[m - 1]) / NAME(dot)(changes[m - 1], changes[m - 1], D);
    next = NAME(update_then_dot)(gamma, 0.0, NULL, q, changes[0], D);
    for (int32_t i = 0; i < m; ++i)
        next = NAME(update_then_dot)(1.0, alpha[i] - rho[i] * next, steps[i], q, i + 1 < m ? changes[i + 1] : NULL, D);
}

void NAME(fu_add_scaled)(double *out, double scale, const REAL *x, int64_t D)
{
    FC_SIMD
    for (int64_t i = 0; i < D; ++i) out[i] += scale * (double)x[i];
}
