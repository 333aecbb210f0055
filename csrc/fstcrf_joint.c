/*
 * fstcrf_joint.c -- sum-product and Viterbi over composed chains, one
 * component step at a time (Sutton & McCallum 2005); see fstcrf_kernel.h for
 * the contract.  The linear-domain checks are those of fstcrf_chain.c
 * (fc__exp_shifted, fc__rescale); a sentence that fails them is reported in
 * redo for the caller to redo exactly.
 */
#include "fstcrf_internal.h"

/* ------------------------------------------------------------------------ */
/* Joint decoding of composed chains                                        */
/* ------------------------------------------------------------------------ */

static int64_t joint_size(const fc_joint *j)
{
    int64_t P = 1;
    for (int32_t k = 0; k < j->num_components; ++k) P *= j->graphs[k].num_states;
    return P;
}

/* L_k: how many states the transition scores of component k depend on. */
static int32_t lower_size(const fc_joint *j, int32_t k)
{
    return k == 0 ? 1 : j->graphs[k - 1].num_states;
}

static int64_t joint_weight_count(const fc_joint *j)
{
    int64_t n = 0;
    for (int32_t k = 0; k < j->num_components; ++k)
        n += (int64_t)lower_size(j, k) * j->graphs[k].num_edges;
    return n;
}

/* doubles: alpha [t_max, P] | beta [t_max, P] | exp_emit [t_max, P]
 *          | steps [t_max, N, P] | log_scale [t_max] | emit_max [t_max]
 *          | tensors [2, P] | exp_trans [W] | exp_trans_out [W] | trans_in [W]
 *          | trans_out [W] | sentence_counts [W] | exp_start [P]
 *          | exp_final [P]
 * with W = sum_k L_k E_k.  No ints are used (one is asked for, so that the
 * caller's buffer is never empty). */
int64_t fc_joint_workspace_doubles(const fc_joint *j, int64_t t_max)
{
    const int64_t P = joint_size(j);
    return (3 + j->num_components) * t_max * P + 2 * t_max + 4 * P + 5 * joint_weight_count(j);
}

int64_t fc_joint_workspace_ints(const fc_joint *j, int64_t t_max)
{
    (void)j;
    (void)t_max;
    return 1;
}

typedef struct {
    int64_t P;
    double *alpha, *beta, *exp_emit; /* [t_max, P] */
    double *steps;                   /* [t_max, N, P] max-semiring result of each component step */
    double *log_scale, *emit_max;    /* [t_max] */
    double *tensor[2];               /* [P] ping-pong buffers for component steps */
    double *exp_trans;               /* [W] exp(trans[k] - trans_max[k]), edge order, per component */
    double *exp_trans_out;           /* [W] the same in leaving-slot order */
    double *trans_in, *trans_out;    /* [W] the scores themselves, in each slot order */
    double *sentence_counts;         /* [W] one sentence's expected edge counts */
    double *exp_start, *exp_final;   /* [P] */
    int64_t weight_offset[64];       /* component k's tables start at weight_offset[k] of [W] */
    double log_offset;               /* start_max + final_max */
    double trans_max_sum;            /* sum_k max trans[k] */
    int scaled_ok;
} joint_buffers;

static joint_buffers joint_carve(const fc_joint *j, fc_workspace *ws)
{
    joint_buffers w;
    const int64_t P = joint_size(j), cells = ws->t_max * P, W = joint_weight_count(j);
    w.P = P;
    w.alpha = ws->doubles;
    w.beta = w.alpha + cells;
    w.exp_emit = w.beta + cells;
    w.steps = w.exp_emit + cells;
    w.log_scale = w.steps + cells * j->num_components;
    w.emit_max = w.log_scale + ws->t_max;
    w.tensor[0] = w.emit_max + ws->t_max;
    w.tensor[1] = w.tensor[0] + P;
    w.exp_trans = w.tensor[1] + P;
    w.exp_trans_out = w.exp_trans + W;
    w.trans_in = w.exp_trans_out + W;
    w.trans_out = w.trans_in + W;
    w.sentence_counts = w.trans_out + W;
    w.exp_start = w.sentence_counts + W;
    for (int64_t k = 0, offset = 0; k < j->num_components; ++k) {
        w.weight_offset[k] = offset;
        offset += (int64_t)lower_size(j, (int32_t)k) * j->graphs[k].num_edges;
    }
    w.exp_final = w.exp_start + P;
    w.log_offset = w.trans_max_sum = 0.0;
    w.scaled_ok = 0;
    return w;
}

/* Lay out the batch-wide transition scores in both slot orders, as they are
 * (max semiring) and, for the linear domain (``linear``), exponentiated: the
 * Viterbi reads the scores alone and skips the exponentials, a cost per call
 * that a call on one sentence would feel. */
static void joint_prepare(const fc_joint *j, joint_buffers *w, int linear)
{
    w->scaled_ok = 1;
    w->trans_max_sum = 0.0;
    for (int32_t k = 0; k < j->num_components; ++k) {
        const fc_graph *g = &j->graphs[k];
        const int32_t L = lower_size(j, k), E = g->num_edges;
        const int64_t at = w->weight_offset[k];
        double *exp_in = w->exp_trans + at, *exp_out = w->exp_trans_out + at;
        if (linear) w->trans_max_sum += fc__exp_shifted(j->trans[k], L * E, exp_in, &w->scaled_ok);
        for (int64_t l = 0; l < L; ++l)
            for (int32_t m = 0; m < E; ++m) {
                w->trans_in[at + l * E + m] = j->trans[k][l * E + m];
                w->trans_out[at + l * E + m] = j->trans[k][l * E + g->out_edge[m]];
                if (linear) exp_out[l * E + m] = exp_in[l * E + g->out_edge[m]];
            }
    }
    if (linear)
        w->log_offset = fc__exp_shifted(j->start, (int32_t)w->P, w->exp_start, &w->scaled_ok)
                        + fc__exp_shifted(j->final, (int32_t)w->P, w->exp_final, &w->scaled_ok);
}

/* The rows of one component step: the component's graph read entering
 * (forward) or leaving (backward), where out[x] gathers from nbr[m] over the
 * slots m of x ("pull"), and for a complete graph the same edges read the
 * other way, where in[y] is pushed along the slots of y.  pull_weight and
 * push_weight [L, E] hold the transition weights in each slot order. */
typedef struct {
    int32_t S, E, L;
    int complete;                     /* E == S * S: every row lists all states in order */
    const int32_t *pull_ptr, *pull_nbr;
    const double *pull_weight, *push_weight;
} component_rows;

/* y[q] += a0 x0[q] + a1 x1[q] + a2 x2[q] + a3 x3[q] for q < n: four AXPYs
 * sharing one load and store of y. */
static void axpy4(const double *a, const double *x0, const double *x1, const double *x2,
                  const double *x3, double *FC_RESTRICT y, int64_t n)
{
    const double a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    FC_SIMD
    for (int64_t q = 0; q < n; ++q) y[q] += (a0 * x0[q] + a1 * x1[q]) + (a2 * x2[q] + a3 * x3[q]);
}

/* y[q] = max(y[q], x0[q] + a0, ..., x3[q] + a3) for q < n. */
static void max4(const double *a, const double *x0, const double *x1, const double *x2,
                 const double *x3, double *FC_RESTRICT y, int64_t n)
{
    const double a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    FC_SIMD
    for (int64_t q = 0; q < n; ++q) {
        const double c01 = x0[q] + a0 > x1[q] + a1 ? x0[q] + a0 : x1[q] + a1;
        const double c23 = x2[q] + a2 > x3[q] + a3 ? x2[q] + a2 : x3[q] + a3;
        const double c = c01 > c23 ? c01 : c23;
        y[q] = c > y[q] ? c : y[q];
    }
}

/* y[q] (+)= x[q] (*) a for q < n, in the linear (sum) or max semiring. */
static void step_row(semiring sr, double a, const double *FC_RESTRICT x, double *FC_RESTRICT y, int64_t n)
{
    if (sr == SEMIRING_MAX) {
        FC_SIMD
        for (int64_t q = 0; q < n; ++q) y[q] = x[q] + a > y[q] ? x[q] + a : y[q];
        return;
    }
    axpy(a, x, y, (int32_t)n);
}

/* One component step on a joint tensor viewed as [pre, S, post]:
 *     out[p, x, q] = (+) over slots m of x of in[p, nbr[m], q] (*) weight[(p mod L) * E + m]
 * Because axis k-1 is the last axis of `pre`, p mod L is the state of the
 * component below.  Linear domain: (+) = +, (*) = x, weights are the
 * exponentiated factors; max semiring: (+) = max, (*) = +, weights are the
 * scores.  Every inner loop runs along a contiguous row: along q for post > 1
 * (four source rows per pass), and along x for the last component of a
 * complete graph (post == 1: in[p, y] pushed along a leaving row). */
static void component_step(semiring sr, const component_rows *c, int64_t pre, int64_t post,
                           const double *in, double *FC_RESTRICT out)
{
    const int32_t S = c->S, E = c->E;
    const double zero = sr == SEMIRING_MAX ? -INFINITY : 0.0;
    for (int64_t p = 0; p < pre; ++p) {
        const int64_t lower = (p % c->L) * (int64_t)E;
        const double *in_p = in + p * S * post;
        double *FC_RESTRICT out_p = out + p * S * post;
        for (int64_t q = 0; q < S * post; ++q) out_p[q] = zero;
        if (post == 1 && c->complete) {
            /* push the rows of a complete graph: out[x] (+)= w[y, x] (*) in[y] */
            const double *w = c->push_weight + lower;
            int32_t y = 0;
            for (; y + 4 <= S; y += 4) {
                const double *w0 = w + (int64_t)y * S;
                if (sr == SEMIRING_MAX) max4(in_p + y, w0, w0 + S, w0 + 2 * S, w0 + 3 * S, out_p, S);
                else axpy4(in_p + y, w0, w0 + S, w0 + 2 * S, w0 + 3 * S, out_p, S);
            }
            for (; y < S; ++y) step_row(sr, in_p[y], w + (int64_t)y * S, out_p, S);
            continue;
        }
        const double *w = c->pull_weight + lower;
        const int32_t *ptr = c->pull_ptr, *nbr = c->pull_nbr;
        for (int32_t x = 0; x < S; ++x) {
            double *FC_RESTRICT o = out_p + x * post;
            int32_t m = ptr[x];
            for (; m + 4 <= ptr[x + 1]; m += 4) {
                const double *x0 = in_p + (int64_t)nbr[m] * post, *x1 = in_p + (int64_t)nbr[m + 1] * post;
                const double *x2 = in_p + (int64_t)nbr[m + 2] * post, *x3 = in_p + (int64_t)nbr[m + 3] * post;
                if (sr == SEMIRING_MAX) max4(w + m, x0, x1, x2, x3, o, post);
                else axpy4(w + m, x0, x1, x2, x3, o, post);
            }
            for (; m < ptr[x + 1]; ++m) step_row(sr, w[m], in_p + (int64_t)nbr[m] * post, o, post);
        }
    }
}

/* Zero (linear domain) or -inf (log domain) the joint states not allowed. */
static void mask_joint(const fc_joint *j, int64_t P, double *row, double excluded)
{
    if (!j->allowed) return;
    for (int64_t s = 0; s < P; ++s)
        if (!j->allowed[s]) row[s] = excluded;
}

/* The rows of component k for a step in the given direction and semiring. */
static component_rows rows_of(semiring sr, int backward, const fc_joint *j, const joint_buffers *w,
                              int32_t k)
{
    const fc_graph *g = &j->graphs[k];
    component_rows c;
    c.S = g->num_states;
    c.E = g->num_edges;
    c.L = lower_size(j, k);
    c.complete = (int64_t)c.E == (int64_t)c.S * c.S;
    c.pull_ptr = backward ? g->out_ptr : g->in_ptr;
    c.pull_nbr = backward ? g->out_dst : g->in_src;
    const double *in_order = sr == SEMIRING_MAX ? w->trans_in + w->weight_offset[k]
                                                : w->exp_trans + w->weight_offset[k];
    const double *out_order = sr == SEMIRING_MAX ? w->trans_out + w->weight_offset[k]
                                                 : w->exp_trans_out + w->weight_offset[k];
    c.pull_weight = backward ? out_order : in_order;
    c.push_weight = backward ? in_order : out_order;
    return c;
}

/* [pre, S_k, post] view of component k: *pre = prod_{i<k} S_i. */
static int64_t post_size(const fc_joint *j, const joint_buffers *w, int32_t k, int64_t *pre)
{
    int64_t before = 1;
    for (int32_t i = 0; i < k; ++i) before *= j->graphs[i].num_states;
    *pre = before;
    return w->P / before / j->graphs[k].num_states;
}

/* Add to counts [L_k, E_k] the expected use of each (lower state, edge) pair
 * of component k at one transition, from the forward tensor entering step k,
 * fwd [P] (over [pre, S, post]), and the backward tensor entering its
 * backward step, bwd [P]:
 *     counts[p mod L, m] += fwd[p, src(m), q] * exp_trans[m] * bwd[p, dst(m), q] / total
 * where total, the same sum over every edge (each path takes one edge of
 * component k), is <fwd, moved> with moved [P] = the backward step's result
 * before rescaling.  Returns 0 if total is not positive. */
static int add_joint_edge_counts(const fc_joint *j, const joint_buffers *w, int32_t k,
                                 const double *fwd, const double *bwd, const double *moved,
                                 double *counts)
{
    const fc_graph *g = &j->graphs[k];
    const int32_t S = g->num_states, E = g->num_edges, L = lower_size(j, k);
    const double *weight = w->exp_trans + w->weight_offset[k];
    int64_t pre;
    const int64_t post = post_size(j, w, k, &pre);
    double total = 0.0;
    FC_SIMD_REDUCTION(+, total)
    for (int64_t s = 0; s < w->P; ++s) total += fwd[s] * moved[s];
    if (!(total > 0.0)) return 0;
    const double inverse = 1.0 / total;
    for (int64_t p = 0; p < pre; ++p) {
        const int64_t lower = (p % L) * (int64_t)E;
        const double *f = fwd + p * S * post, *b = bwd + p * S * post;
        for (int32_t x = 0; x < S; ++x) {
            const int32_t lo = g->in_ptr[x], hi = g->in_ptr[x + 1];
            if (post == 1) {
                const double c = b[x] * inverse;
                if (c == 0.0) continue;
                double *out = counts + lower;
                const double *wt = weight + lower;
                if (hi - lo == S) {    /* every state enters x, in order */
                    FC_SIMD
                    for (int32_t i = 0; i < S; ++i) out[lo + i] += f[i] * wt[lo + i] * c;
                } else {
                    for (int32_t m = lo; m < hi; ++m) out[m] += f[g->in_src[m]] * wt[m] * c;
                }
                continue;
            }
            const double *b_x = b + x * post;
            for (int32_t m = lo; m < hi; ++m) {
                const double *f_y = f + (int64_t)g->in_src[m] * post;
                double dot = 0.0;
                FC_SIMD_REDUCTION(+, dot)
                for (int64_t q = 0; q < post; ++q) dot += f_y[q] * b_x[q];
                counts[lower + m] += dot * weight[lower + m] * inverse;
            }
        }
    }
    return 1;
}

/* Apply all component transitions to `cur` (forward: components in chain
 * order through entering edges; backward: reverse order through leaving
 * edges), writing the last step's result to out_last if it is not NULL.
 *   Linear domain: rescales after every step, adding the log factors to
 *   *log_factor, and returns the buffer holding the result or NULL when a
 *   check fails.  Going forward, the result of step k < N-1 (the tensor
 *   entering step k+1) is kept in stash [N, P] row k+1.  Going backward
 *   with edge_counts [W], stash holds those forward tensors of the same
 *   transition and fwd_first [P] the one entering step 0 (the forward row),
 *   and each component's expected (lower state, edge) counts are added.
 *   Max semiring (forward only): step k's result is kept in stash row k, for
 *   the backtrace. */
static double *joint_transition(semiring sr, int backward, const fc_joint *j,
                                const joint_buffers *w, const double *cur, double *log_factor,
                                double *stash, const double *fwd_first, double *edge_counts,
                                double *out_last)
{
    const int32_t N = j->num_components;
    const int64_t P = w->P;
    double *out = NULL;
    int buffer = 0;
    for (int32_t step = 0; step < N; ++step) {
        const int32_t k = backward ? N - 1 - step : step;
        int64_t pre;
        const int64_t post = post_size(j, w, k, &pre);
        const component_rows c = rows_of(sr, backward, j, w, k);
        if (sr == SEMIRING_MAX) out = stash + (int64_t)k * P;
        else if (!backward && step < N - 1 && stash) out = stash + (int64_t)(k + 1) * P;
        else if (step == N - 1 && out_last) out = out_last;
        else {
            out = w->tensor[buffer];
            buffer ^= 1;
        }
        component_step(sr, &c, pre, post, cur, out);
        if (edge_counts && !add_joint_edge_counts(j, w, k, k == 0 ? fwd_first : stash + k * P, cur, out,
                                                  edge_counts + w->weight_offset[k]))
            return NULL;
        if (sr != SEMIRING_MAX) {
            double factor;
            if (!fc__rescale(out, (int32_t)P, &factor)) return NULL;
            *log_factor += factor;
        }
        cur = out;
    }
    return out;
}

/* Linear-domain forward (backward == 0) or backward table of one sentence;
 * returns 0 when a check fails.  The forward pass keeps the tensors entering
 * each component step in w->steps (for edge counts); the backward pass adds
 * the expected counts to edge_counts [W] unless it is NULL. */
static int joint_scaled_pass(int backward, const fc_joint *j, joint_buffers *w, int64_t T,
                             double *table, double *edge_counts)
{
    const int64_t P = w->P, N = j->num_components;
    double discarded = 0.0;
    if (!backward) {
        for (int64_t s = 0; s < P; ++s) table[s] = w->exp_start[s] * w->exp_emit[s];
        mask_joint(j, P, table, 0.0);
        if (!fc__rescale(table, (int32_t)P, &w->log_scale[0])) return 0;
        for (int64_t t = 1; t < T; ++t) {
            double step = 0.0, *row = table + t * P;
            if (!joint_transition(SEMIRING_SCALED, 0, j, w, row - P, &step, w->steps + t * N * P, NULL,
                                  NULL, row))
                return 0;
            const double *e = w->exp_emit + t * P;
            for (int64_t s = 0; s < P; ++s) row[s] *= e[s];
            mask_joint(j, P, row, 0.0);
            if (!fc__rescale(row, (int32_t)P, &w->log_scale[t])) return 0;
            w->log_scale[t] += step;
        }
        return 1;
    }
    double *last = table + (T - 1) * P;
    for (int64_t s = 0; s < P; ++s) last[s] = w->exp_final[s];
    mask_joint(j, P, last, 0.0);
    if (!fc__rescale(last, (int32_t)P, &discarded)) return 0;
    for (int64_t t = T - 2; t >= 0; --t) {
        double *v = w->tensor[1], *row = table + t * P;
        const double *next = table + (t + 1) * P, *e = w->exp_emit + (t + 1) * P;
        for (int64_t s = 0; s < P; ++s) v[s] = next[s] * e[s];
        if (!fc__rescale(v, (int32_t)P, &discarded)) return 0;
        /* joint_transition ping-pongs starting with tensor[0], so v in
         * tensor[1] is read before it is overwritten */
        if (!joint_transition(SEMIRING_SCALED, 1, j, w, v, &discarded, w->steps + (t + 1) * N * P,
                              w->alpha + t * P, edge_counts, row))
            return 0;
        /* the last step left row rescaled; only a mask can change it */
        mask_joint(j, P, row, 0.0);
        if (j->allowed && !fc__rescale(row, (int32_t)P, &discarded)) return 0;
    }
    return 1;
}

static int check_joint(const fc_joint *j, const fc_batch *b, const fc_workspace *ws)
{
    if (j->num_components < 1 || j->num_components > 64) return FC_BAD_ARGUMENT;
    if (joint_size(j) > INT32_MAX) return FC_BAD_ARGUMENT;
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t T = b->offsets[i + 1] - b->offsets[i];
        if (T <= 0 || T > ws->t_max) return FC_BAD_ARGUMENT;
    }
    return FC_OK;
}

int fc_joint_forward_backward(const fc_joint *j, const fc_batch *b, double *log_z,
                              double *node_marg, double *edge_counts, int32_t *redo,
                              fc_workspace *ws)
{
    int status = check_joint(j, b, ws);
    if (status != FC_OK) return status;
    joint_buffers w = joint_carve(j, ws);
    joint_prepare(j, &w, 1);
    const int64_t P = w.P, W = joint_weight_count(j);
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const double *emit = b->emit + off * P;
        int ok = w.scaled_ok;
        for (int64_t t = 0; t < T; ++t)
            w.emit_max[t] = fc__exp_shifted(emit + t * P, (int32_t)P, w.exp_emit + t * P, &ok);
        /* a sentence the caller redoes must add nothing: its counts are
         * gathered apart and added once both passes have succeeded */
        double *counts = edge_counts ? w.sentence_counts : NULL;
        for (int64_t m = 0; counts && m < W; ++m) counts[m] = 0.0;
        ok = ok && joint_scaled_pass(0, j, &w, T, w.alpha, NULL)
             && (!(node_marg || counts) || joint_scaled_pass(1, j, &w, T, w.beta, counts));
        redo[i] = !ok;
        if (!ok) {
            log_z[i] = NAN;
            continue;
        }
        const double *last = w.alpha + (T - 1) * P;
        double total = 0.0, lz = w.log_offset + (double)(T - 1) * w.trans_max_sum;
        for (int64_t s = 0; s < P; ++s) total += last[s] * w.exp_final[s];
        for (int64_t t = 0; t < T; ++t) lz += w.log_scale[t] + w.emit_max[t];
        log_z[i] = lz + log(total);
        if (total == 0.0) status = FC_INFEASIBLE;
        for (int64_t m = 0; counts && m < W; ++m) edge_counts[m] += counts[m];
        for (int64_t t = 0; node_marg && t < T; ++t) {
            const double *a = w.alpha + t * P, *bt = w.beta + t * P;
            double *out = node_marg + (off + t) * P, norm = 0.0;
            FC_SIMD_REDUCTION(+, norm)
            for (int64_t s = 0; s < P; ++s) norm += (out[s] = a[s] * bt[s]);
            const double inverse = 1.0 / norm;
            for (int64_t s = 0; s < P; ++s) out[s] *= inverse;
        }
    }
    return status;
}

int fc_joint_viterbi(const fc_joint *j, const fc_batch *b, int32_t *path, double *score,
                     fc_workspace *ws)
{
    int status = check_joint(j, b, ws);
    if (status != FC_OK) return status;
    joint_buffers w = joint_carve(j, ws);
    joint_prepare(j, &w, 0);
    const int64_t P = w.P;
    const int32_t N = j->num_components;
    int64_t strides[64]; /* joint index = sum_k state_k * strides[k] */
    for (int64_t k = N - 1, stride = 1; k >= 0; stride *= j->graphs[k].num_states, --k)
        strides[k] = stride;
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const double *emit = b->emit + off * P;
        for (int64_t s = 0; s < P; ++s) w.alpha[s] = j->start[s] + emit[s];
        mask_joint(j, P, w.alpha, -INFINITY);
        for (int64_t t = 1; t < T; ++t) {
            double *row = w.alpha + t * P;
            const double *moved = joint_transition(SEMIRING_MAX, 0, j, &w, row - P, NULL,
                                                   w.steps + t * N * P, NULL, NULL, NULL);
            for (int64_t s = 0; s < P; ++s) row[s] = moved[s] + emit[t * P + s];
            mask_joint(j, P, row, -INFINITY);
        }
        double best = -INFINITY;
        int64_t state = -1;
        for (int64_t s = 0; s < P; ++s) {
            const double c = w.alpha[(T - 1) * P + s] + j->final[s];
            if (c > best) { best = c; state = s; }
        }
        score[i] = best;
        if (state < 0) {
            status = FC_INFEASIBLE;
            for (int64_t t = 0; t < T; ++t) path[off + t] = -1;
            continue;
        }
        for (int64_t t = T - 1; t >= 0; --t) {
            path[off + t] = (int32_t)state;
            if (t == 0) break;
            /* undo the component steps, last first: the previous state of
             * component k is the first neighbour that reproduces the stored
             * maximum of step k (the same additions give the same bits) */
            for (int32_t k = N - 1; k >= 0; --k) {
                const fc_graph *g = &j->graphs[k];
                const int32_t S = g->num_states, L = lower_size(j, k);
                const double *before = k == 0 ? w.alpha + (t - 1) * P : w.steps + (t * N + k - 1) * P;
                const double target = w.steps[(t * N + k) * P + state];
                const int64_t x = (state / strides[k]) % S;
                const int64_t rest = state - x * strides[k];
                const double *w_row = j->trans[k]
                                      + (k == 0 ? 0 : (state / strides[k - 1]) % L) * (int64_t)g->num_edges;
                int64_t previous = -1;
                for (int32_t m = g->in_ptr[x]; m < g->in_ptr[x + 1] && previous < 0; ++m)
                    if (before[rest + (int64_t)g->in_src[m] * strides[k]] + w_row[m] == target)
                        previous = g->in_src[m];
                state = rest + previous * strides[k];
            }
        }
    }
    return status;
}
