/*
 * fstcrf_update.h -- the learners' vector steps: sparse steps of the online
 * learners and the L-BFGS two-loop recursion.
 *
 * A minibatch touches few of the D weights, so the bandit learner gathers its
 * gradient at the touched coordinates only and moves only those.  Both loops
 * are trivial, but in numpy each is several passes over temporaries; here each
 * is one pass.  Conventions as in fstcrf_kernel.h: shapes in brackets, no
 * globals, no allocation, caller-owned buffers.
 */
#ifndef FSTCRF_UPDATE_H
#define FSTCRF_UPDATE_H

#include <stdint.h>

/* values[m] = sum over p of buffers[p][index[m]], then buffers[p][index[m]] = 0.
 *   buffers  [P] pointers to [D] arrays;  index [M] coordinates in [0, D), distinct
 *   values   [M] written */
void fu_gather_clear(double *const *buffers, int32_t num_buffers, const int64_t *index, int64_t m,
                     double *values);

/* Step rules (ascent: theta moves along g). */
#define FU_CONSTANT 0
#define FU_ADAGRAD 1
#define FU_ADAM 2

typedef struct {
    int32_t rule;       /* FU_CONSTANT, FU_ADAGRAD or FU_ADAM */
    double rate;        /* step size (Adam: already bias-corrected for this step) */
    double beta1;       /* Adam's moment decay */
    double beta2;       /* Adam's (and not AdaGrad's) square decay */
    double epsilon;     /* added to the root of the squares */
} fu_step;

/* Move theta at coordinates index[m] by gradient values g[m]:
 *   constant  theta += rate g
 *   adagrad   squares += g^2;  theta += rate g / (sqrt(squares) + epsilon)
 *   adam      moments = beta1 moments + (1 - beta1) g;  squares = beta2 squares + (1 - beta2) g^2;
 *             theta += rate moments / (sqrt(squares) + epsilon)
 *   theta, squares, moments  [D] (squares unused by constant, moments only by adam; may be NULL then)
 *   index [M], g [M]
 * Returns 0, or 2 (FC_BAD_ARGUMENT) for an unknown rule or a missing array. */
int fu_apply(const fu_step *step, double *theta, double *squares, double *moments,
             const int64_t *index, const double *g, int64_t m);

/* The L-BFGS two-loop recursion (Nocedal & Wright, Algorithm 7.4): q = H q for the
 * inverse-Hessian approximation H of m correction pairs, with H0 = (s.y / y.y) I of
 * the newest pair; one pass over the vectors per dot product or update.
 *   steps   [m] pointers to the steps s_i [D], oldest first
 *   changes [m] pointers to the gradient changes y_i [D], in the same order
 *   rho     [m] 1 / (s_i . y_i)
 *   alpha   [m] scratch
 *   q       [D] UPDATED: a gradient in, H times it out */
void fu_two_loop(double *const *steps, double *const *changes, const double *rho, int32_t m, int64_t D,
                 double *alpha, double *q);

/* out [D] += scale * x [D], in one call: L-BFGS moves its weights to a trial point
 * in place (an interrupted move would leave them half moved). */
void fu_add_scaled(double *out, double scale, const double *x, int64_t D);

/* The same two for a history kept in single precision (half the memory of its
 * pairs and direction): steps, changes and q are float [D]; every product and sum
 * is in double and q is rounded to float after each update. */
void fu_two_loop_single(float *const *steps, float *const *changes, const double *rho, int32_t m, int64_t D,
                        double *alpha, float *q);
void fu_add_scaled_single(double *out, double scale, const float *x, int64_t D);

/* Sums in double over float vectors of a single-precision history:
 *   fu_dot_single    a [D] . b [D]  (s . y, y . y)
 *   fu_slope_single  gradient double [D] . direction float [D]  (a slope along the direction) */
double fu_dot_single(const float *a, const float *b, int64_t D);
double fu_slope_single(const double *gradient, const float *direction, int64_t D);

/* Round vector double [D] to float in its own memory: its first 4D bytes then hold
 * the D floats, and the caller may give the rest back (realloc). */
void fu_round_in_place(double *vector, int64_t D);

/* y float [D] = gradient double [D] - y: the new pair's gradient change, where y held
 * the previous gradient rounded to float (so that the line search keeps it in half
 * the memory); the difference is taken in double, then rounded. */
void fu_change_single(float *y, const double *gradient, int64_t D);

#endif
