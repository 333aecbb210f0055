/*
 * fstcrf_update.c -- sparse steps of the online learners (see the header).
 */
#include <math.h>
#include <stddef.h>

#include "fstcrf_update.h"

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
