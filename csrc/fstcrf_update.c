/*
 * fstcrf_update.c -- the learners' vector steps (see the header).
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

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

/* The two-loop recursion and the move along a direction, once for history vectors of
 * double (fu_two_loop, fu_add_scaled) and once of float (the _single names):
 * csrc/fstcrf_vector_steps.h is written for REAL and NAME(stem). */
#define REAL double
#define NAME(stem) stem
#include "fstcrf_vector_steps.h"
#undef REAL
#undef NAME
#define REAL float
#define NAME(stem) stem##_single
#include "fstcrf_vector_steps.h"
#undef REAL
#undef NAME

double fu_dot_single(const float *a, const float *b, int64_t D)
{
    return dot_single(a, b, D);
}

double fu_slope_single(const double *gradient, const float *direction, int64_t D)
{
    double sum = 0.0;
    FC_SIMD_REDUCTION(+, sum)
    for (int64_t i = 0; i < D; ++i) sum += gradient[i] * (double)direction[i];
    return sum;
}

void fu_round_in_place(double *vector, int64_t D)
{
    /* float i goes to bytes 4i .. 4i+3, which hold parts of doubles i/2 at most, read
     * already; byte copies keep the two types' accesses within the aliasing rules */
    unsigned char *bytes = (unsigned char *)vector;
    for (int64_t i = 0; i < D; ++i) {
        double wide;
        memcpy(&wide, bytes + 8 * i, sizeof wide);
        const float narrow = (float)wide;
        memcpy(bytes + 4 * i, &narrow, sizeof narrow);
    }
}

void fu_change_single(float *y, const double *gradient, int64_t D)
{
    FC_SIMD
    for (int64_t i = 0; i < D; ++i) y[i] = (float)(gradient[i] - (double)y[i]);
}
