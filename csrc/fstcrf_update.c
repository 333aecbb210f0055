/*
 * fstcrf_update.c -- the learners' vector steps (see the header).
 */
#include <math.h>
#include <stddef.h>

#include "fstcrf_update.h"
#include "fstcrf_portable.h"

void fu_gather_clear(double *const *buffers, int32_t num_buffers, const int64_t *index, int64_t m,
                     double *values)
{
    for (int64_t i = 0; i < m; ++i) {
        double sum = 0.0;
        for (int32_t p = 0; p < num_buffers; ++p) {
            sum += buffers[p][index[i]];
            buffers[p][index[i]] = 0.0;
        }
        values[i] = sum;
    }
}

int fu_apply(const fu_step *step, double *theta, double *squares, double *moments,
             const int64_t *index, const double *g, int64_t m)
{
    if (step->rule == FU_CONSTANT) {
        for (int64_t i = 0; i < m; ++i) theta[index[i]] += step->rate * g[i];
        return 0;
    }
    if (squares == NULL) return 2;
    if (step->rule == FU_ADAGRAD) {
        for (int64_t i = 0; i < m; ++i) {
            const int64_t k = index[i];
            squares[k] += g[i] * g[i];
            theta[k] += step->rate * g[i] / (sqrt(squares[k]) + step->epsilon);
        }
        return 0;
    }
    if (step->rule != FU_ADAM || moments == NULL) return 2;
    for (int64_t i = 0; i < m; ++i) {
        const int64_t k = index[i];
        moments[k] = step->beta1 * moments[k] + (1.0 - step->beta1) * g[i];
        squares[k] = step->beta2 * squares[k] + (1.0 - step->beta2) * g[i] * g[i];
        theta[k] += step->rate * moments[k] / (sqrt(squares[k]) + step->epsilon);
    }
    return 0;
}

static double dot(const double *a, const double *b, int64_t n)
{
    double sum = 0.0;
    FC_SIMD_REDUCTION(+, sum)
    for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

/* q = scale q + a x (x may be NULL: no term), and the dot product of `next` with the
 * new q (0 if next is NULL), in one pass over the vectors. */
static double update_then_dot(double scale, double a, const double *x, double *q, const double *next, int64_t n)
{
    double sum = 0.0;
    if (x != NULL && next != NULL) {
        FC_SIMD_REDUCTION(+, sum)
        for (int64_t i = 0; i < n; ++i) {
            q[i] = scale * q[i] + a * x[i];
            sum += next[i] * q[i];
        }
    } else if (x != NULL) {
        FC_SIMD
        for (int64_t i = 0; i < n; ++i) q[i] = scale * q[i] + a * x[i];
    } else if (next != NULL) {
        FC_SIMD_REDUCTION(+, sum)
        for (int64_t i = 0; i < n; ++i) {
            q[i] *= scale;
            sum += next[i] * q[i];
        }
    } else {
        FC_SIMD
        for (int64_t i = 0; i < n; ++i) q[i] *= scale;
    }
    return sum;
}

void fu_two_loop(double *const *steps, double *const *changes, const double *rho, int32_t m, int64_t D,
                 double *alpha, double *q)
{
    if (m == 0) return;
    /* each update is followed by the dot product the next one needs */
    double next = dot(steps[m - 1], q, D);
    for (int32_t i = m - 1; i >= 0; --i) {
        alpha[i] = rho[i] * next;
        next = update_then_dot(1.0, -alpha[i], changes[i], q, i > 0 ? steps[i - 1] : NULL, D);
    }
    const double gamma = (1.0 / rho[m - 1]) / dot(changes[m - 1], changes[m - 1], D);
    next = update_then_dot(gamma, 0.0, NULL, q, changes[0], D);
    for (int32_t i = 0; i < m; ++i)
        next = update_then_dot(1.0, alpha[i] - rho[i] * next, steps[i], q, i + 1 < m ? changes[i + 1] : NULL, D);
}

void fu_add_scaled(double *out, double scale, const double *x, int64_t D)
{
    FC_SIMD
    for (int64_t i = 0; i < D; ++i) out[i] += scale * x[i];
}
