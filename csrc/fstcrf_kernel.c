/*
 * fstcrf_kernel.c -- see fstcrf_kernel.h for the contract.
 *
 * One dynamic program (chain_pass) runs forward or backward over a sentence
 * in either the log semiring (sum-product) or the max semiring (Viterbi);
 * the semiring only changes how the scores entering a state are combined
 * (reduce_edges).  Everything else is built on it.
 *
 * Numerics.  Sum-product first runs in the linear domain with per-token
 * rescaling (SEMIRING_SCALED: one exp() per state and token, multiply-adds
 * per edge).  That pass is exact to rounding as long as every factor it
 * multiplies stays a normal double: it checks that each transition, start,
 * final and per-token emission score is within SCALED_SPREAD nats of its
 * maximum and that every reachable state stays within SCALED_SPREAD nats of
 * the best state of its token; products of up to three such factors are then
 * >= 1e-300.  A sentence that breaks a check is redone in the log domain.
 *
 * The log-domain pass (SEMIRING_LOG) keeps log-potentials and factors the
 * largest source score and the largest transition score out of each sum:
 *     log sum_i exp(v_i + w_ij) = m_v + m_w + log sum_i exp(v_i - m_v) exp(w_ij - m_w)
 * When the scaled sum for a state falls below SCALED_SUM_FLOOR (only with
 * score spreads of hundreds of nats) that state is redone with a per-edge max
 * shift, so the result is exact to rounding for any finite scores.
 */
#include "fstcrf_kernel.h"

#include <math.h>
#include <stddef.h>

#define SCALED_SUM_FLOOR 1e-280
/* Linear-domain factors must be >= exp(-SCALED_SPREAD) = 1e-100. */
#define SCALED_SPREAD 230.0
#define SCALED_FLOOR 1e-100
/* Edge posteriors are formed as p_i * exp_trans_e * q_j * c; the fast form is
 * used while c stays below exp(MAX_LOG_SCALE), so a product lost to underflow
 * is below 1e-308 * 1e250. */
#define MAX_LOG_SCALE 575.0

typedef enum { SEMIRING_LOG = 0, SEMIRING_MAX = 1, SEMIRING_SCALED = 2 } semiring;

/* ------------------------------------------------------------------------ */
/* Workspace layout                                                          */
/* ------------------------------------------------------------------------ */

/* doubles: alpha [t_max, S] | beta [t_max, S] | exp_emit [t_max, S]
 *          | log_scale [t_max] | emit_max [t_max] | exp_trans [C, E] | exp_trans_out [C, E]
 *          | exp_start [S] | exp_final [S] | vec [2, S] | kscore [t_max, S, k] */
int64_t fc_workspace_doubles(int32_t S, int32_t E, int32_t C, int64_t t_max, int32_t k)
{
    return 3 * t_max * S + 2 * t_max + 2 * (int64_t)C * E + 4 * (int64_t)S + t_max * S * (int64_t)k;
}

/* ints: backptr [t_max, S, k] (entry = source state * k + source rank) */
int64_t fc_workspace_ints(int32_t S, int32_t E, int64_t t_max, int32_t k)
{
    (void)E;
    return t_max * S * (int64_t)k;
}

typedef struct {
    double *alpha;      /* [t_max, S] forward table */
    double *beta;       /* [t_max, S] backward table */
    double *exp_emit;   /* [t_max, S] exp(emit[t, s] - emit_max[t]) */
    double *log_scale;  /* [t_max] log of the forward rescaling factor of token t */
    double *emit_max;   /* [t_max] max_s emit[t, s] */
    double *exp_trans;  /* [C, E] exp(trans[c, e] - trans_max) */
    double *exp_trans_out; /* [C, E] exp_trans[c, out_edge[k]]: the same in leaving-slot order */
    double *exp_start;  /* [S] exp(start[s] - start_max) */
    double *exp_final;  /* [S] exp(final[s] - final_max) */
    double *vec_a;      /* [S] scratch */
    double *vec_b;      /* [S] scratch */
    double *kscore;     /* [t_max, S, k] k-best score lists */
    int32_t *backptr;   /* [t_max, S, k] k-best / Viterbi back pointers */
    double trans_max, start_max, final_max;
    int scaled_ok;      /* transition/start/final spreads allow SEMIRING_SCALED */
} buffers;

static buffers carve(const fc_graph *g, const fc_scores *sc, fc_workspace *ws)
{
    const int64_t S = g->num_states, cells = ws->t_max * S, scores = (int64_t)sc->num_classes * g->num_edges;
    buffers w;
    w.alpha = ws->doubles;
    w.beta = w.alpha + cells;
    w.exp_emit = w.beta + cells;
    w.log_scale = w.exp_emit + cells;
    w.emit_max = w.log_scale + ws->t_max;
    w.exp_trans = w.emit_max + ws->t_max;
    w.exp_trans_out = w.exp_trans + scores;
    w.exp_start = w.exp_trans_out + scores;
    w.exp_final = w.exp_start + S;
    w.vec_a = w.exp_final + S;
    w.vec_b = w.vec_a + S;
    w.kscore = w.vec_b + S;
    w.backptr = ws->ints;
    w.trans_max = w.start_max = w.final_max = 0.0;
    w.scaled_ok = 0;
    return w;
}

static double max_of(const double *v, int32_t n);

/* out[i] = exp(v[i] - max v); returns max v; *ok cleared if a finite entry
 * is more than SCALED_SPREAD below the max. */
static double exp_shifted(const double *v, int32_t n, double *out, int *ok)
{
    const double m = n > 0 ? max_of(v, n) : 0.0;
    for (int32_t i = 0; i < n; ++i) {
        out[i] = exp(v[i] - m);
        if (v[i] != -INFINITY && v[i] < m - SCALED_SPREAD) *ok = 0;
    }
    return m;
}

/* Fill the batch-wide exponentiated scores. */
static void prepare_transitions(const fc_graph *g, const fc_scores *sc, buffers *w)
{
    const int32_t E = g->num_edges;
    w->scaled_ok = 1;
    w->trans_max = exp_shifted(sc->trans, sc->num_classes * E, w->exp_trans, &w->scaled_ok);
    for (int64_t row = 0; row < (int64_t)sc->num_classes * E; row += E)
        for (int32_t k = 0; k < E; ++k) w->exp_trans_out[row + k] = w->exp_trans[row + g->out_edge[k]];
    w->start_max = exp_shifted(sc->start, g->num_states, w->exp_start, &w->scaled_ok);
    w->final_max = exp_shifted(sc->final, g->num_states, w->exp_final, &w->scaled_ok);
}

/* Offset of the scores of the transition into token t in [C, E] tables, for a
 * sentence whose token classes are cls [T] (NULL: every token is of class 0). */
static int64_t trans_row(const int32_t *cls, int64_t t, int32_t E)
{
    return cls ? (int64_t)cls[t] * E : 0;
}

static double max_of(const double *v, int32_t n)
{
    double m = -INFINITY;
#pragma omp simd reduction(max:m)
    for (int32_t i = 0; i < n; ++i) m = v[i] > m ? v[i] : m;
    return m;
}

/* sum over k in [lo, hi) of v[idx[k]] * weight[k], with four partial sums
 * so the additions do not wait on each other. */
static double gather_dot(const double *v, const int32_t *idx, const double *weight,
                         int32_t lo, int32_t hi)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int32_t k = lo;
    for (; k + 4 <= hi; k += 4) {
        s0 += v[idx[k]] * weight[k];
        s1 += v[idx[k + 1]] * weight[k + 1];
        s2 += v[idx[k + 2]] * weight[k + 2];
        s3 += v[idx[k + 3]] * weight[k + 3];
    }
    for (; k < hi; ++k) s0 += v[idx[k]] * weight[k];
    return (s0 + s1) + (s2 + s3);
}

/* sum_{k=lo..hi-1} v[idx[k]] * weight[k] over one CSR row of a graph with S
 * states.  A row with S slots holds every state in ascending order (the
 * fc_graph contract), so it is a contiguous dot product the compiler can
 * vectorise: the dense fast path of first-order and complete topologies. */
static double row_dot(const double *v, const int32_t *idx, const double *weight,
                      int32_t lo, int32_t hi, int32_t S)
{
    if (hi - lo != S) return gather_dot(v, idx, weight, lo, hi);
    const double *w_row = weight + lo;
    double s = 0.0;
#pragma omp simd reduction(+:s)
    for (int32_t k = 0; k < S; ++k) s += v[k] * w_row[k];
    return s;
}

/* y[k] += a * x[k] for k < n. */
static void axpy(double a, const double *x, double *y, int32_t n)
{
#pragma omp simd
    for (int32_t k = 0; k < n; ++k) y[k] += a * x[k];
}

/* log sum_i exp(v[i]), exact for any finite or -inf entries. */
static double log_sum_exp(const double *v, int32_t n)
{
    const double m = max_of(v, n);
    if (m == -INFINITY) return -INFINITY;
    double s = 0.0;
    for (int32_t i = 0; i < n; ++i) s += exp(v[i] - m);
    return m + log(s);
}

/* ------------------------------------------------------------------------ */
/* The dynamic program                                                       */
/* ------------------------------------------------------------------------ */

/* For every state x:  out[x] = (+)_{slots k of x} v[nbr[k]] (*) trans[edge(k)]
 * over the CSR rows ptr [S+1] / nbr [E] / edge [E] (edge == NULL means the
 * slot number is the edge id), with trans [E] one row of transition scores
 * and exp_weight [E] the same row exponentiated (less trans_max) in slot
 * order.  In the max semiring arg[x] receives the arg-max neighbour (first
 * one among ties), or -1. */
static void reduce_edges(semiring sr, int32_t S, const int32_t *ptr, const int32_t *nbr,
                         const int32_t *edge, const double *v, const double *trans,
                         const double *exp_weight, double trans_max, double *scaled_v,
                         double *out, int32_t *arg)
{
    if (sr == SEMIRING_MAX) {
        for (int32_t x = 0; x < S; ++x) {
            double best = -INFINITY;
            int32_t best_nbr = -1;
            if (!edge && ptr[x + 1] - ptr[x] == S) {
                /* every state enters x: sources are 0..S-1 in slot order */
                const double *w_row = trans + ptr[x];
                for (int32_t y = 0; y < S; ++y) {
                    const double c = v[y] + w_row[y];
                    if (c > best) { best = c; best_nbr = y; }
                }
            } else {
                for (int32_t k = ptr[x]; k < ptr[x + 1]; ++k) {
                    const double c = v[nbr[k]] + trans[edge ? edge[k] : k];
                    if (c > best) { best = c; best_nbr = nbr[k]; }
                }
            }
            out[x] = best;
            if (arg) arg[x] = best_nbr;
        }
        return;
    }
    const double m_v = max_of(v, S);
    if (m_v == -INFINITY) {
        for (int32_t x = 0; x < S; ++x) out[x] = -INFINITY;
        return;
    }
    for (int32_t y = 0; y < S; ++y) scaled_v[y] = exp(v[y] - m_v);
    const double shift = m_v + trans_max;
    for (int32_t x = 0; x < S; ++x) {
        double s = gather_dot(scaled_v, nbr, exp_weight, ptr[x], ptr[x + 1]);
        if (s >= SCALED_SUM_FLOOR) {
            out[x] = shift + log(s);
            continue;
        }
        /* exact path: per-state max shift */
        double m = -INFINITY;
        for (int32_t k = ptr[x]; k < ptr[x + 1]; ++k) {
            const double c = v[nbr[k]] + trans[edge ? edge[k] : k];
            if (c > m) m = c;
        }
        if (m == -INFINITY) { out[x] = -INFINITY; continue; }
        s = 0.0;
        for (int32_t k = ptr[x]; k < ptr[x + 1]; ++k)
            s += exp(v[nbr[k]] + trans[edge ? edge[k] : k] - m);
        out[x] = m + log(s);
    }
}

/* Fill table [T, S] for one sentence with emissions emit [T, S] and token
 * classes cls [T] (or NULL).
 * Forward:  table[t, s] = (+) over paths of tokens 0..t ending in s.
 * Backward: table[t, s] = (+) over continuations from s at t to the end,
 *           excluding emit[t, s] and including final scores.
 * backptr [T, S] (max semiring, may be NULL) gets the arg-max predecessor
 * (forward) or successor (backward) of each state, -1 where there is none;
 * the row of the first (forward) or last (backward) token is left unset. */
static void chain_pass(semiring sr, int backward, const fc_graph *g, const fc_scores *sc,
                       const int32_t *cls, const double *emit, int64_t T, const buffers *w,
                       double *table, int32_t *backptr)
{
    const int32_t S = g->num_states, E = g->num_edges;
    if (!backward) {
        for (int32_t s = 0; s < S; ++s) table[s] = sc->start[s] + emit[s];
        for (int64_t t = 1; t < T; ++t) {
            double *row = table + t * S;
            const int64_t r = trans_row(cls, t, E);
            reduce_edges(sr, S, g->in_ptr, g->in_src, NULL, row - S, sc->trans + r, w->exp_trans + r,
                         w->trans_max, w->vec_a, row, backptr ? backptr + t * S : NULL);
            const double *e = emit + t * S;
            for (int32_t s = 0; s < S; ++s) row[s] += e[s];
        }
        return;
    }
    for (int32_t s = 0; s < S; ++s) table[(T - 1) * S + s] = sc->final[s];
    for (int64_t t = T - 2; t >= 0; --t) {
        const double *next = table + (t + 1) * S, *e = emit + (t + 1) * S;
        for (int32_t s = 0; s < S; ++s) w->vec_b[s] = next[s] + e[s];
        const int64_t r = trans_row(cls, t + 1, E);
        reduce_edges(sr, S, g->out_ptr, g->out_dst, g->out_edge, w->vec_b, sc->trans + r,
                     w->exp_trans_out + r, w->trans_max, w->vec_a, table + t * S,
                     backptr ? backptr + t * S : NULL);
    }
}

/* Divide row [S] by its maximum m and set *log_factor = log m.  Returns 0 if
 * the row is all zero or a non-zero entry is below SCALED_FLOOR * m. */
static int rescale(double *row, int32_t S, double *log_factor)
{
    const double m = max_of(row, S);
    if (!(m > 0.0)) return 0;
    const double inverse = 1.0 / m;
    int small = 0;
#pragma omp simd reduction(|:small)
    for (int32_t s = 0; s < S; ++s) {
        row[s] *= inverse;
        small |= row[s] != 0.0 && row[s] < SCALED_FLOOR;
    }
    *log_factor = log(m);
    return !small;
}

/* The linear-domain pass (SEMIRING_SCALED) over one sentence whose exp_emit
 * and emit_max rows are filled.  Forward: table[t] is alpha_t divided by
 * exp(sum_{u<=t} log_scale[u]) and by the emission, transition and start
 * maxima factored out.  Backward: table[t] is proportional to beta_t (its
 * scale is not kept; posteriors are normalised per token).  Returns 0 if a
 * check fails, and the caller redoes the sentence in the log domain. */
static int scaled_pass(int backward, const fc_graph *g, const buffers *w, const int32_t *cls,
                       int64_t T, double *table)
{
    const int32_t S = g->num_states, E = g->num_edges;
    const int complete = (int64_t)g->num_edges == (int64_t)S * S;
    double discarded;
    if (!backward) {
        for (int32_t s = 0; s < S; ++s) table[s] = w->exp_start[s] * w->exp_emit[s];
        if (!rescale(table, S, &w->log_scale[0])) return 0;
        for (int64_t t = 1; t < T; ++t) {
            const double *prev = table + (t - 1) * S, *e = w->exp_emit + t * S;
            const double *m_in = w->exp_trans + trans_row(cls, t, E);
            const double *m_out = w->exp_trans_out + trans_row(cls, t, E);
            double *row = table + t * S;
            if (complete) {   /* row = sum_i prev[i] * M[i, :], M's rows in leaving-slot order */
                for (int32_t j = 0; j < S; ++j) row[j] = 0.0;
                for (int32_t i = 0; i < S; ++i) axpy(prev[i], m_out + (int64_t)i * S, row, S);
                for (int32_t j = 0; j < S; ++j) row[j] *= e[j];
            } else {
                for (int32_t j = 0; j < S; ++j)
                    row[j] = row_dot(prev, g->in_src, m_in, g->in_ptr[j], g->in_ptr[j + 1], S) * e[j];
            }
            if (!rescale(row, S, &w->log_scale[t])) return 0;
        }
        return 1;
    }
    double *v = w->vec_b;
    for (int32_t s = 0; s < S; ++s) table[(T - 1) * S + s] = w->exp_final[s];
    if (!rescale(table + (T - 1) * S, S, &discarded)) return 0;
    for (int64_t t = T - 2; t >= 0; --t) {
        const double *next = table + (t + 1) * S, *e = w->exp_emit + (t + 1) * S;
        const double *m_in = w->exp_trans + trans_row(cls, t + 1, E);
        const double *m_out = w->exp_trans_out + trans_row(cls, t + 1, E);
        double *row = table + t * S;
        for (int32_t s = 0; s < S; ++s) v[s] = e[s] * next[s];
        if (complete) {       /* row = sum_j v[j] * M[:, j], M's columns in entering-edge order */
            for (int32_t i = 0; i < S; ++i) row[i] = 0.0;
            for (int32_t j = 0; j < S; ++j) axpy(v[j], m_in + (int64_t)j * S, row, S);
        } else {
            for (int32_t i = 0; i < S; ++i)
                row[i] = row_dot(v, g->out_dst, m_out, g->out_ptr[i], g->out_ptr[i + 1], S);
        }
        if (!rescale(row, S, &discarded)) return 0;
    }
    return 1;
}

/* log Z from a completed scaled forward table. */
static double scaled_log_z(const fc_graph *g, const buffers *w, int64_t T)
{
    const int32_t S = g->num_states;
    const double *last = w->alpha + (T - 1) * S;
    double total = 0.0, offset = w->start_max + w->final_max + (double)(T - 1) * w->trans_max;
    for (int32_t s = 0; s < S; ++s) total += last[s] * w->exp_final[s];
    for (int64_t t = 0; t < T; ++t) offset += w->log_scale[t] + w->emit_max[t];
    return offset + log(total);
}

/* Score of the best / total of all complete paths from a forward table. */
static double close_paths(semiring sr, const double *last_row, const double *final,
                          int32_t S, double *scratch, int32_t *arg)
{
    for (int32_t s = 0; s < S; ++s) scratch[s] = last_row[s] + final[s];
    if (sr == SEMIRING_LOG) return log_sum_exp(scratch, S);
    double best = -INFINITY;
    int32_t best_s = -1;
    for (int32_t s = 0; s < S; ++s)
        if (scratch[s] > best) { best = scratch[s]; best_s = s; }
    if (arg) *arg = best_s;
    return best;
}

static int check_workspace(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                           const fc_workspace *ws, int32_t k)
{
    if (g->num_states <= 0 || sc->num_classes < 1 || ws->k < k) return FC_BAD_ARGUMENT;
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t T = b->offsets[i + 1] - b->offsets[i];
        if (T <= 0 || T > ws->t_max) return FC_BAD_ARGUMENT;
    }
    return FC_OK;
}

/* ------------------------------------------------------------------------ */
/* Sum-product                                                               */
/* ------------------------------------------------------------------------ */

/* Add the expected use of every edge between tokens t-1 and t to counts [E],
 * for the row trans [E] of transition scores into token t (exp_trans [E]: the
 * same exponentiated, less trans_max). */
static void add_edge_posteriors(const fc_graph *g, const double *trans, const double *exp_trans,
                                const buffers *w, const double *alpha_prev, const double *beta_t,
                                const double *emit_t, double log_z, double *counts)
{
    const int32_t S = g->num_states;
    double *p = w->vec_a, *q = w->vec_b;
    const double m_alpha = max_of(alpha_prev, S);
    double m_rest = -INFINITY;
    for (int32_t s = 0; s < S; ++s) {
        q[s] = emit_t[s] + beta_t[s];
        if (q[s] > m_rest) m_rest = q[s];
    }
    const double log_scale = m_alpha + m_rest + w->trans_max - log_z;
    if (log_scale <= MAX_LOG_SCALE) {
        const double scale = exp(log_scale);
        for (int32_t s = 0; s < S; ++s) {
            p[s] = exp(alpha_prev[s] - m_alpha);
            q[s] = exp(q[s] - m_rest) * scale;
        }
        for (int32_t j = 0; j < S; ++j) {
            if (q[j] == 0.0) continue;
            for (int32_t e = g->in_ptr[j]; e < g->in_ptr[j + 1]; ++e)
                counts[e] += p[g->in_src[e]] * exp_trans[e] * q[j];
        }
        return;
    }
    for (int32_t j = 0; j < S; ++j)
        for (int32_t e = g->in_ptr[j]; e < g->in_ptr[j + 1]; ++e)
            counts[e] += exp(alpha_prev[g->in_src[e]] + trans[e] + q[j] - log_z);
}

/* Posteriors of one sentence from its forward and backward tables, either
 * scaled (linear domain) or log-domain; each token is normalised by its own
 * sum over states, which equals Z but shares the rounding of its tables. */
static void add_posteriors(int scaled, const fc_graph *g, const fc_scores *sc, const buffers *w,
                           const int32_t *cls, const double *emit, int64_t T, double *node_marg,
                           double *edge_counts)
{
    const int32_t S = g->num_states, E = g->num_edges;
    double *joint = w->vec_b;
    for (int64_t t = 0; t < T; ++t) {
        const double *a = w->alpha + t * S, *bt = w->beta + t * S;
        double norm = 0.0, log_norm = 0.0;
        if (scaled) {
            for (int32_t s = 0; s < S; ++s) norm += (joint[s] = a[s] * bt[s]);
        } else {
            for (int32_t s = 0; s < S; ++s) joint[s] = a[s] + bt[s];
            log_norm = log_sum_exp(joint, S);
        }
        if (node_marg) {
            double *out = node_marg + t * S;
            if (scaled)
                for (int32_t s = 0; s < S; ++s) out[s] = joint[s] / norm;
            else
                for (int32_t s = 0; s < S; ++s) out[s] = exp(joint[s] - log_norm);
        }
        if (!edge_counts || t == 0) continue;
        const int64_t r = trans_row(cls, t, E);
        double *counts_t = edge_counts + r;
        const double *exp_trans = w->exp_trans + r;
        if (!scaled) {
            add_edge_posteriors(g, sc->trans + r, exp_trans, w, a - S, bt, emit + t * S, log_norm,
                                counts_t);
            continue;
        }
        /* sum over edges into j of alpha_{t-1}(i) M_ij equals alpha_t(j) * row max / exp_emit */
        const double *prev = a - S, *e = w->exp_emit + t * S;
        const double factor = 1.0 / (exp(w->log_scale[t]) * norm);
        for (int32_t j = 0; j < S; ++j) {
            const double q = e[j] * bt[j] * factor;
            const int32_t lo = g->in_ptr[j], hi = g->in_ptr[j + 1];
            if (q == 0.0) continue;
            if (hi - lo == S) {            /* every state enters j, in order: contiguous */
                double *counts = counts_t + lo;
                const double *m = exp_trans + lo;
#pragma omp simd
                for (int32_t i = 0; i < S; ++i) counts[i] += prev[i] * m[i] * q;
                continue;
            }
            for (int32_t k = lo; k < hi; ++k)
                counts_t[k] += prev[g->in_src[k]] * exp_trans[k] * q;
        }
    }
}

int fc_forward_backward(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                        double *log_z, double *node_marg, double *edge_counts,
                        fc_workspace *ws)
{
    int status = check_workspace(g, sc, b, ws, 1);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states;
    buffers w = carve(g, sc, ws);
    prepare_transitions(g, sc, &w);
    const int backward_needed = node_marg != NULL || edge_counts != NULL;
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const double *emit = b->emit + off * S;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        int scaled = w.scaled_ok;
        for (int64_t t = 0; t < T; ++t)
            w.emit_max[t] = exp_shifted(emit + t * S, S, w.exp_emit + t * S, &scaled);
        scaled = scaled && scaled_pass(0, g, &w, cls, T, w.alpha)
                 && (!backward_needed || scaled_pass(1, g, &w, cls, T, w.beta));
        double lz;
        if (scaled) {
            lz = scaled_log_z(g, &w, T);
        } else {
            chain_pass(SEMIRING_LOG, 0, g, sc, cls, emit, T, &w, w.alpha, NULL);
            lz = close_paths(SEMIRING_LOG, w.alpha + (T - 1) * S, sc->final, S, w.vec_a, NULL);
            if (backward_needed && lz > -INFINITY)
                chain_pass(SEMIRING_LOG, 1, g, sc, cls, emit, T, &w, w.beta, NULL);
        }
        log_z[i] = lz;
        if (lz == -INFINITY) {
            status = FC_INFEASIBLE;
            if (node_marg)
                for (int64_t n = 0; n < T * S; ++n) node_marg[off * S + n] = 0.0;
            continue;
        }
        if (backward_needed)
            add_posteriors(scaled, g, sc, &w, cls, emit, T, node_marg ? node_marg + off * S : NULL,
                           edge_counts);
    }
    return status;
}

int fc_forward_backward_each(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                             double *log_z, double *node_marg, double *edge_counts,
                             fc_workspace *ws)
{
    int status = check_workspace(g, sc, b, ws, 1);
    if (status != FC_OK) return status;
    const int64_t per_sentence = (int64_t)sc->num_classes * g->num_edges;
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], offsets[2] = {0, b->offsets[i + 1] - off};
        const fc_batch one = {1, offsets, b->emit + off * g->num_states,
                              b->token_class != NULL ? b->token_class + off : NULL};
        const int one_status = fc_forward_backward(g, sc, &one, log_z + i,
                                                   node_marg ? node_marg + off * g->num_states : NULL,
                                                   edge_counts ? edge_counts + i * per_sentence : NULL, ws);
        if (one_status > status) status = one_status;
    }
    return status;
}

/* ------------------------------------------------------------------------ */
/* Max-product                                                               */
/* ------------------------------------------------------------------------ */

int fc_viterbi(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
               int32_t *path, double *score, fc_workspace *ws)
{
    int status = check_workspace(g, sc, b, ws, 1);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states;
    buffers w = carve(g, sc, ws);
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        chain_pass(SEMIRING_MAX, 0, g, sc, cls, b->emit + off * S, T, &w, w.alpha, w.backptr);
        int32_t s = -1;
        score[i] = close_paths(SEMIRING_MAX, w.alpha + (T - 1) * S, sc->final, S, w.vec_a, &s);
        if (s < 0) {
            status = FC_INFEASIBLE;
            for (int64_t t = 0; t < T; ++t) path[off + t] = -1;
            continue;
        }
        for (int64_t t = T - 1; t >= 0; --t) {
            path[off + t] = s;
            if (t > 0) s = w.backptr[t * S + s];
        }
    }
    return status;
}

int fc_max_marginals(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                     double *max_marg, double *best, fc_workspace *ws)
{
    int status = check_workspace(g, sc, b, ws, 1);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states;
    buffers w = carve(g, sc, ws);
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const double *emit = b->emit + off * S;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        chain_pass(SEMIRING_MAX, 0, g, sc, cls, emit, T, &w, w.alpha, NULL);
        chain_pass(SEMIRING_MAX, 1, g, sc, cls, emit, T, &w, w.beta, NULL);
        best[i] = close_paths(SEMIRING_MAX, w.alpha + (T - 1) * S, sc->final, S, w.vec_a, NULL);
        if (best[i] == -INFINITY) status = FC_INFEASIBLE;
        double *out = max_marg + off * S;
        for (int64_t n = 0; n < T * S; ++n) out[n] = w.alpha[n] + w.beta[n];
    }
    return status;
}

/* ------------------------------------------------------------------------ */
/* Span Viterbi                                                              */
/* ------------------------------------------------------------------------ */

static int check_spans(const fc_batch *b, int32_t num_spans, const int32_t *span_sentence,
                       const int64_t *span_first, const int64_t *span_length,
                       const int64_t *mask_offsets, const int64_t *path_offsets)
{
    if (num_spans < 0 || mask_offsets[0] != 0 || path_offsets[0] != 0) return FC_BAD_ARGUMENT;
    for (int32_t k = 0; k < num_spans; ++k) {
        const int32_t i = span_sentence[k];
        if (i < 0 || i >= b->num_sequences || (k > 0 && i < span_sentence[k - 1]))
            return FC_BAD_ARGUMENT;
        const int64_t T = b->offsets[i + 1] - b->offsets[i];
        if (span_first[k] < 0 || span_length[k] < 1 || span_first[k] > T - span_length[k]
            || mask_offsets[k + 1] - mask_offsets[k] != span_length[k]
            || path_offsets[k + 1] - path_offsets[k] != T)
            return FC_BAD_ARGUMENT;
    }
    return FC_OK;
}

/* Write path [T]: state s at token i; before it, the span back pointers
 * span_pred [T, S] down to the span's first token a, then the forward back
 * pointers pred [T, S] down to token 0; after it, the backward successors
 * succ [T, S].  s = -1 (no path) writes -1 throughout. */
static void trace_span_path(int32_t S, int64_t T, int64_t a, int64_t i, int32_t s,
                            const int32_t *pred, const int32_t *span_pred, const int32_t *succ,
                            int32_t *path)
{
    if (s < 0) {
        for (int64_t t = 0; t < T; ++t) path[t] = -1;
        return;
    }
    path[i] = s;
    for (int64_t t = i; t > 0; --t) path[t - 1] = (t > a ? span_pred : pred)[t * S + path[t]];
    for (int64_t t = i; t + 1 < T; ++t) path[t + 1] = succ[t * S + path[t]];
}

/* Per sentence with a span: alpha with back pointers pred and beta with
 * successors succ.  Per span a..last: the constrained forward table G (kept
 * in kscore), whose row t holds the best prefixes that keep to the span's
 * mask on tokens a..t-1 (then masked at t, so that row t+1 can extend it),
 * with back pointers span_pred.  A path leaving the mask first at token t
 * scores G[t, s] + beta[t, s] for an s not allowed at t; one keeping to it
 * scores G[last, s] + beta[last, s].  backptr (k >= 3) holds pred | succ |
 * span_pred, each [t_max, S]. */
int fc_span_viterbi(const fc_graph *g, const fc_scores *sc, const fc_batch *b, int32_t num_spans,
                    const int32_t *span_sentence, const int64_t *span_first,
                    const int64_t *span_length, const int64_t *mask_offsets,
                    const uint8_t *allowed, const int64_t *path_offsets, double *inside,
                    double *outside, int32_t *inside_path, int32_t *outside_path,
                    fc_workspace *ws)
{
    int status = check_workspace(g, sc, b, ws, 3);
    if (status == FC_OK)
        status = check_spans(b, num_spans, span_sentence, span_first, span_length, mask_offsets,
                             path_offsets);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states, E = g->num_edges;
    const int64_t cells = ws->t_max * S;
    buffers w = carve(g, sc, ws);
    int32_t *pred = w.backptr, *succ = pred + cells, *span_pred = succ + cells;
    double *constrained = w.kscore;
    for (int32_t k = 0; k < num_spans; ++k) {
        const int32_t i = span_sentence[k];
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const double *emit = b->emit + off * S;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        if (k == 0 || i != span_sentence[k - 1]) {
            chain_pass(SEMIRING_MAX, 0, g, sc, cls, emit, T, &w, w.alpha, pred);
            chain_pass(SEMIRING_MAX, 1, g, sc, cls, emit, T, &w, w.beta, succ);
            if (close_paths(SEMIRING_MAX, w.alpha + (T - 1) * S, sc->final, S, w.vec_a, NULL)
                == -INFINITY)
                status = FC_INFEASIBLE;
        }
        const int64_t a = span_first[k], last = a + span_length[k] - 1;
        const uint8_t *mask = allowed + mask_offsets[k] * S;
        double best_in = -INFINITY, best_out = -INFINITY;
        int32_t in_state = -1, out_state = -1;
        int64_t out_token = a;
        for (int64_t t = a; t <= last; ++t, mask += S) {
            double *row = constrained + t * S;
            const double *beta = w.beta + t * S;
            if (t == a) {
                for (int32_t s = 0; s < S; ++s) row[s] = w.alpha[t * S + s];
            } else {
                const int64_t r = trans_row(cls, t, E);
                reduce_edges(SEMIRING_MAX, S, g->in_ptr, g->in_src, NULL, row - S, sc->trans + r,
                             w.exp_trans + r, w.trans_max, w.vec_a, row, span_pred + t * S);
                for (int32_t s = 0; s < S; ++s) row[s] += emit[t * S + s];
            }
            for (int32_t s = 0; s < S; ++s) {
                if (mask[s]) continue;
                const double c = row[s] + beta[s];
                if (c > best_out) { best_out = c; out_token = t; out_state = s; }
                row[s] = -INFINITY;
            }
        }
        const double *row = constrained + last * S, *beta = w.beta + last * S;
        for (int32_t s = 0; s < S; ++s) {
            const double c = row[s] + beta[s];
            if (c > best_in) { best_in = c; in_state = s; }
        }
        inside[k] = best_in;
        outside[k] = best_out;
        if (inside_path)
            trace_span_path(S, T, a, last, in_state, pred, span_pred, succ,
                            inside_path + path_offsets[k]);
        if (outside_path)
            trace_span_path(S, T, a, out_token, out_state, pred, span_pred, succ,
                            outside_path + path_offsets[k]);
    }
    return status;
}

/* ------------------------------------------------------------------------ */
/* k best                                                                    */
/* ------------------------------------------------------------------------ */

/* Insert candidate (c, code) into the descending list scores/codes [k].
 * Strict comparison keeps earlier candidates ahead of equal later ones. */
static int insert_candidate(double *scores, int32_t *codes, int32_t k, double c, int32_t code)
{
    if (!(c > scores[k - 1])) return 0;
    int32_t pos = k - 1;
    while (pos > 0 && c > scores[pos - 1]) {
        scores[pos] = scores[pos - 1];
        codes[pos] = codes[pos - 1];
        --pos;
    }
    scores[pos] = c;
    codes[pos] = code;
    return 1;
}

int fc_kbest(const fc_graph *g, const fc_scores *sc, const fc_batch *b, int32_t k,
             int32_t *paths, double *scores, int32_t *found, fc_workspace *ws)
{
    if (k <= 0) return FC_BAD_ARGUMENT;
    int status = check_workspace(g, sc, b, ws, k);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states, E = g->num_edges;
    const int64_t N = b->offsets[b->num_sequences];
    buffers w = carve(g, sc, ws);
    /* kscore[(t*S + s)*k + r]: r-th best score of paths ending in s at t;
     * backptr holds (source state * k + source rank). */
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const double *emit = b->emit + off * S;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        for (int64_t n = 0; n < T * S * k; ++n) w.kscore[n] = -INFINITY;
        for (int32_t s = 0; s < S; ++s) w.kscore[(int64_t)s * k] = sc->start[s] + emit[s];
        for (int64_t t = 1; t < T; ++t) {
            const double *trans = sc->trans + trans_row(cls, t, E);
            for (int32_t j = 0; j < S; ++j) {
                double *list = w.kscore + (t * S + j) * k;
                int32_t *codes = w.backptr + (t * S + j) * k;
                for (int32_t e = g->in_ptr[j]; e < g->in_ptr[j + 1]; ++e) {
                    const int32_t src = g->in_src[e];
                    const double *prev = w.kscore + ((t - 1) * S + src) * k;
                    for (int32_t r = 0; r < k && prev[r] > -INFINITY; ++r)
                        if (!insert_candidate(list, codes, k, prev[r] + trans[e], src * k + r))
                            break;
                }
                for (int32_t r = 0; r < k; ++r) list[r] += emit[t * S + j];
            }
        }
        double *best = scores + (int64_t)i * k;
        int32_t *best_codes = w.backptr; /* row t = 0 is never read as back pointers */
        for (int32_t r = 0; r < k; ++r) best[r] = -INFINITY;
        for (int32_t s = 0; s < S; ++s) {
            const double *last = w.kscore + ((T - 1) * S + s) * k;
            for (int32_t r = 0; r < k && last[r] > -INFINITY; ++r)
                if (!insert_candidate(best, best_codes, k, last[r] + sc->final[s], s * k + r))
                    break;
        }
        int32_t n_found = 0;
        while (n_found < k && best[n_found] > -INFINITY) ++n_found;
        found[i] = n_found;
        if (n_found == 0) status = FC_INFEASIBLE;
        for (int32_t r = 0; r < k; ++r) {
            int32_t *out = paths + (int64_t)r * N + off;
            if (r >= n_found) {
                for (int64_t t = 0; t < T; ++t) out[t] = -1;
                continue;
            }
            int32_t code = best_codes[r];
            for (int64_t t = T - 1; t >= 0; --t) {
                const int32_t s = code / k, rank = code % k;
                out[t] = s;
                if (t > 0) code = w.backptr[(t * S + s) * k + rank];
            }
        }
    }
    return status;
}

/* ------------------------------------------------------------------------ */
/* Sampling                                                                  */
/* ------------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *state)
{
    return (double)(splitmix64(state) >> 11) * 0x1.0p-53;
}

/* Draw an index from weights exp(logw[i] - max), i < n; all-(-inf) gives -1. */
static int32_t draw_log_weighted(const double *logw, int32_t n, double *scratch, uint64_t *rng)
{
    const double m = max_of(logw, n);
    if (m == -INFINITY) return -1;
    double total = 0.0;
    int32_t last_positive = -1;
    for (int32_t i = 0; i < n; ++i) {
        scratch[i] = exp(logw[i] - m);
        total += scratch[i];
        if (scratch[i] > 0.0) last_positive = i;
    }
    double u = uniform01(rng) * total;
    for (int32_t i = 0; i < n; ++i) {
        if (u < scratch[i]) return i;
        u -= scratch[i];
    }
    return last_positive; /* rounding left u just past the total */
}

int fc_sample(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
              uint64_t seed, int64_t first_index, int32_t num_samples,
              int32_t *samples, fc_workspace *ws)
{
    int status = check_workspace(g, sc, b, ws, 1);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states, E = g->num_edges;
    const int64_t N = b->offsets[b->num_sequences];
    buffers w = carve(g, sc, ws);
    prepare_transitions(g, sc, &w);
    double *logw = w.vec_b, *scratch = w.vec_a;
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        chain_pass(SEMIRING_LOG, 0, g, sc, cls, b->emit + off * S, T, &w, w.alpha, NULL);
        for (int32_t r = 0; r < num_samples; ++r) {
            int32_t *out = samples + (int64_t)r * N + off;
            uint64_t rng = seed;
            rng ^= splitmix64(&rng) + (uint64_t)(first_index + i) * 0xD1B54A32D192ED03ULL;
            rng ^= splitmix64(&rng) + (uint64_t)r * 0x8CB92BA72F3D8DD7ULL;
            const double *last = w.alpha + (T - 1) * S;
            for (int32_t s = 0; s < S; ++s) logw[s] = last[s] + sc->final[s];
            int32_t s = draw_log_weighted(logw, S, scratch, &rng);
            if (s < 0) {
                status = FC_INFEASIBLE;
                for (int64_t t = 0; t < T; ++t) out[t] = -1;
                continue;
            }
            out[T - 1] = s;
            for (int64_t t = T - 1; t > 0; --t) {
                const int32_t lo = g->in_ptr[s], n_in = g->in_ptr[s + 1] - lo;
                const double *prev = w.alpha + (t - 1) * S, *trans = sc->trans + trans_row(cls, t, E);
                for (int32_t k = 0; k < n_in; ++k)
                    logw[k] = prev[g->in_src[lo + k]] + trans[lo + k];
                s = g->in_src[lo + draw_log_weighted(logw, n_in, scratch, &rng)];
                out[t - 1] = s;
            }
        }
    }
    return status;
}

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
 * (max semiring) and exponentiated (linear domain). */
static void joint_prepare(const fc_joint *j, joint_buffers *w)
{
    w->scaled_ok = 1;
    w->trans_max_sum = 0.0;
    for (int32_t k = 0; k < j->num_components; ++k) {
        const fc_graph *g = &j->graphs[k];
        const int32_t L = lower_size(j, k), E = g->num_edges;
        const int64_t at = w->weight_offset[k];
        double *exp_in = w->exp_trans + at, *exp_out = w->exp_trans_out + at;
        w->trans_max_sum += exp_shifted(j->trans[k], L * E, exp_in, &w->scaled_ok);
        for (int64_t l = 0; l < L; ++l)
            for (int32_t m = 0; m < E; ++m) {
                w->trans_in[at + l * E + m] = j->trans[k][l * E + m];
                w->trans_out[at + l * E + m] = j->trans[k][l * E + g->out_edge[m]];
                exp_out[l * E + m] = exp_in[l * E + g->out_edge[m]];
            }
    }
    w->log_offset = exp_shifted(j->start, (int32_t)w->P, w->exp_start, &w->scaled_ok)
                    + exp_shifted(j->final, (int32_t)w->P, w->exp_final, &w->scaled_ok);
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
                  const double *x3, double *restrict y, int64_t n)
{
    const double a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
#pragma omp simd
    for (int64_t q = 0; q < n; ++q) y[q] += (a0 * x0[q] + a1 * x1[q]) + (a2 * x2[q] + a3 * x3[q]);
}

/* y[q] = max(y[q], x0[q] + a0, ..., x3[q] + a3) for q < n. */
static void max4(const double *a, const double *x0, const double *x1, const double *x2,
                 const double *x3, double *restrict y, int64_t n)
{
    const double a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
#pragma omp simd
    for (int64_t q = 0; q < n; ++q) {
        const double c01 = x0[q] + a0 > x1[q] + a1 ? x0[q] + a0 : x1[q] + a1;
        const double c23 = x2[q] + a2 > x3[q] + a3 ? x2[q] + a2 : x3[q] + a3;
        const double c = c01 > c23 ? c01 : c23;
        y[q] = c > y[q] ? c : y[q];
    }
}

/* y[q] (+)= x[q] (*) a for q < n, in the linear (sum) or max semiring. */
static void step_row(semiring sr, double a, const double *restrict x, double *restrict y, int64_t n)
{
    if (sr == SEMIRING_MAX) {
#pragma omp simd
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
                           const double *in, double *restrict out)
{
    const int32_t S = c->S, E = c->E;
    const double zero = sr == SEMIRING_MAX ? -INFINITY : 0.0;
    for (int64_t p = 0; p < pre; ++p) {
        const int64_t lower = (p % c->L) * (int64_t)E;
        const double *in_p = in + p * S * post;
        double *restrict out_p = out + p * S * post;
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
            double *restrict o = out_p + x * post;
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
#pragma omp simd reduction(+:total)
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
#pragma omp simd
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
#pragma omp simd reduction(+:dot)
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
            if (!rescale(out, (int32_t)P, &factor)) return NULL;
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
        if (!rescale(table, (int32_t)P, &w->log_scale[0])) return 0;
        for (int64_t t = 1; t < T; ++t) {
            double step = 0.0, *row = table + t * P;
            if (!joint_transition(SEMIRING_SCALED, 0, j, w, row - P, &step, w->steps + t * N * P, NULL,
                                  NULL, row))
                return 0;
            const double *e = w->exp_emit + t * P;
            for (int64_t s = 0; s < P; ++s) row[s] *= e[s];
            mask_joint(j, P, row, 0.0);
            if (!rescale(row, (int32_t)P, &w->log_scale[t])) return 0;
            w->log_scale[t] += step;
        }
        return 1;
    }
    double *last = table + (T - 1) * P;
    for (int64_t s = 0; s < P; ++s) last[s] = w->exp_final[s];
    mask_joint(j, P, last, 0.0);
    if (!rescale(last, (int32_t)P, &discarded)) return 0;
    for (int64_t t = T - 2; t >= 0; --t) {
        double *v = w->tensor[1], *row = table + t * P;
        const double *next = table + (t + 1) * P, *e = w->exp_emit + (t + 1) * P;
        for (int64_t s = 0; s < P; ++s) v[s] = next[s] * e[s];
        if (!rescale(v, (int32_t)P, &discarded)) return 0;
        /* joint_transition ping-pongs starting with tensor[0], so v in
         * tensor[1] is read before it is overwritten */
        if (!joint_transition(SEMIRING_SCALED, 1, j, w, v, &discarded, w->steps + (t + 1) * N * P,
                              w->alpha + t * P, edge_counts, row))
            return 0;
        /* the last step left row rescaled; only a mask can change it */
        mask_joint(j, P, row, 0.0);
        if (j->allowed && !rescale(row, (int32_t)P, &discarded)) return 0;
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
    joint_prepare(j, &w);
    const int64_t P = w.P, W = joint_weight_count(j);
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const double *emit = b->emit + off * P;
        int ok = w.scaled_ok;
        for (int64_t t = 0; t < T; ++t)
            w.emit_max[t] = exp_shifted(emit + t * P, (int32_t)P, w.exp_emit + t * P, &ok);
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
#pragma omp simd reduction(+:norm)
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
    joint_prepare(j, &w);
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
