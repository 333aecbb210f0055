/*
 * fstcrf_chain.c -- the dynamic program over one sentence, and the workspace
 * it runs in; see fstcrf_kernel.h for the contract and fstcrf_internal.h for
 * what the other kernel sources use of this file.
 *
 * One dynamic program (fc__chain_pass) runs forward or backward over a
 * sentence in either the log semiring (sum-product) or the max semiring
 * (Viterbi); the semiring only changes how the scores entering a state are
 * combined (fc__reduce_edges).  Everything else is built on it.
 *
 * Numerics.  Sum-product first runs in the linear domain with per-token
 * rescaling (SEMIRING_SCALED, fc__scaled_pass: one exp() per state and token,
 * multiply-adds per edge).  That pass is exact to rounding as long as every
 * factor it multiplies stays a normal double: it checks that each transition,
 * start, final and per-token emission score is within SCALED_SPREAD nats of
 * its maximum and that every reachable state stays within SCALED_SPREAD nats
 * of the best state of its token; products of up to three such factors are
 * then >= 1e-300.  A sentence that breaks a check is redone in the log domain.
 *
 * The log-domain pass (SEMIRING_LOG) keeps log-potentials and factors the
 * largest source score and the largest transition score out of each sum:
 *     log sum_i exp(v_i + w_ij) = m_v + m_w + log sum_i exp(v_i - m_v) exp(w_ij - m_w)
 * When the scaled sum for a state falls below SCALED_SUM_FLOOR (only with
 * score spreads of hundreds of nats) that state is redone with a per-edge max
 * shift, so the result is exact to rounding for any finite scores.
 */
#include "fstcrf_internal.h"

#define SCALED_SUM_FLOOR 1e-280
/* Linear-domain factors must be >= exp(-SCALED_SPREAD) = 1e-100. */
#define SCALED_SPREAD 230.0
#define SCALED_FLOOR 1e-100

/* ------------------------------------------------------------------------ */
/* Workspace layout                                                          */
/* ------------------------------------------------------------------------ */

/* doubles: alpha [t_max, S] | beta [t_max, S] | exp_emit [t_max, S]
 *          | log_scale [t_max] | emit_max [t_max] | exp_trans [C, E] | exp_trans_out [C, E]
 *          | exp_start [S] | exp_final [S] | vec [2, S] | partial [4, S] | kscore [t_max, S, k]
 *          | trans_push [C, E] */
int64_t fc_workspace_doubles(int32_t S, int32_t E, int32_t C, int64_t t_max, int32_t k)
{
    return 3 * t_max * S + 2 * t_max + 3 * (int64_t)C * E + 8 * (int64_t)S + t_max * S * (int64_t)k;
}

/* ints: backptr [t_max, S, k] (entry = source state * k + source rank) | lane [S] | block [S] | entering [S] */
int64_t fc_workspace_ints(int32_t S, int32_t E, int64_t t_max, int32_t k)
{
    (void)E;
    return t_max * S * (int64_t)k + 3 * (int64_t)S;
}

buffers fc__carve(const fc_graph *g, const fc_scores *sc, fc_workspace *ws)
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
    w.partial = w.vec_b + S;
    w.kscore = w.partial + 4 * S;
    w.trans_push = w.kscore + cells * ws->k;
    w.push_ok = 0;
    w.backptr = ws->ints;
    w.lane = ws->ints + cells * ws->k;
    w.lanes_ok = 0;
    w.block = w.lane + S;
    w.entering = w.block + S;
    w.blocks_ok = 0;
    w.trans_max = w.start_max = w.final_max = 0.0;
    w.scaled_ok = 0;
    return w;
}

double fc__exp_shifted(const double *v, int32_t n, double *out, int *ok)
{
    const double m = n > 0 ? max_of(v, n) : 0.0;
    for (int32_t i = 0; i < n; ++i) {
        out[i] = exp(v[i] - m);
        if (v[i] != -INFINITY && v[i] < m - SCALED_SPREAD) *ok = 0;
    }
    return m;
}

double fc__exp_shifted_by_class(const double *v, int32_t n, const int32_t *cls, int32_t k, double *scratch,
                                double *out, int *ok)
{
    const double m = n > 0 ? max_of(v, n) : 0.0;
    double *score = scratch, *taken = scratch + k; /* the last score of each class and its exp */
    for (int32_t c = 0; c < k; ++c) score[c] = NAN; /* equal to nothing */
    for (int32_t i = 0; i < n; ++i) {
        const int32_t c = cls[i];
        if (v[i] != score[c]) {
            score[c] = v[i];
            taken[c] = exp(v[i] - m);
        }
        out[i] = taken[c];
        if (v[i] != -INFINITY && v[i] < m - SCALED_SPREAD) *ok = 0;
    }
    return m;
}

void fc__prepare_transitions(const fc_graph *g, const fc_scores *sc, buffers *w)
{
    const int32_t E = g->num_edges;
    w->scaled_ok = 1;
    w->trans_max = fc__exp_shifted(sc->trans, sc->num_classes * E, w->exp_trans, &w->scaled_ok);
    for (int64_t row = 0; row < (int64_t)sc->num_classes * E; row += E)
        for (int32_t k = 0; k < E; ++k) w->exp_trans_out[row + k] = w->exp_trans[row + g->out_edge[k]];
    w->start_max = fc__exp_shifted(sc->start, g->num_states, w->exp_start, &w->scaled_ok);
    w->final_max = fc__exp_shifted(sc->final, g->num_states, w->exp_final, &w->scaled_ok);
}

void fc__prepare_push(const fc_graph *g, const fc_scores *sc, int64_t num_tokens, buffers *w)
{
    const int32_t S = g->num_states, E = g->num_edges;
    w->push_ok = 0;
    if ((int64_t)E != (int64_t)S * S || num_tokens < sc->num_classes) return;
    for (int64_t row = 0; row < (int64_t)sc->num_classes * E; row += E)
        for (int32_t k = 0; k < E; ++k) w->trans_push[row + k] = sc->trans[row + g->out_edge[k]];
    w->push_ok = 1;
}

void fc__plan_lanes(const fc_graph *g, buffers *w)
{
    const int32_t S = g->num_states;
    w->lanes_ok = 0;
    for (int32_t j = 0; j < S; ++j) {
        const int32_t lo = g->in_ptr[j], hi = g->in_ptr[j + 1];
        if (hi > lo && g->in_src[hi - 1] - g->in_src[lo] != hi - 1 - lo) return;
        w->lane[j] = -1;
    }
    for (int32_t i = 0; i < S; ++i) {
        const int32_t lo = g->out_ptr[i], n = g->out_ptr[i + 1] - lo, full = n - n % 4;
        for (int32_t r = 0; r < n; ++r) {
            const int32_t j = g->out_dst[lo + r], lane = r < full ? r % 4 : 0;
            if (w->lane[j] == -1)
                w->lane[j] = lane;
            else if (w->lane[j] != lane)
                return;
        }
    }
    w->lanes_ok = 1;
}

/* sum over k in [lo, hi) of v[idx[k]] * weight[k], with four partial sums
 * so the additions do not wait on each other (slot k - lo joins sum
 * (k - lo) % 4, the last (hi - lo) % 4 slots sum 0). */
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

/* gather_dot of consecutive entries: sum over k < n of v[k] * weight[k], the
 * same partial sums added in the same order, with no index to load; sums 0
 * and 1, and 2 and 3, side by side in pairs. */
static double run_dot(const double *v, const double *weight, int32_t n)
{
    fc_pair s01 = fc_pair_zero(), s23 = fc_pair_zero();
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) {
        s01 = fc_pair_add(s01, fc_pair_mul(fc_pair_load(v + k), fc_pair_load(weight + k)));
        s23 = fc_pair_add(s23, fc_pair_mul(fc_pair_load(v + k + 2), fc_pair_load(weight + k + 2)));
    }
    double s[4];
    fc_pair_store(s, s01);
    fc_pair_store(s + 2, s23);
    for (; k < n; ++k) s[0] += v[k] * weight[k];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* sum_{k=lo..hi-1} v[idx[k]] * weight[k] over one CSR row of a graph with S
 * states.  A row with S slots holds every state in ascending order (the
 * fc_graph contract), so it is a contiguous dot product the compiler can
 * vectorise: the dense fast path of first-order and complete topologies.  A
 * row of consecutive states (second-order chains) is read without its
 * indices, in gather_dot's order. */
static double row_dot(const double *v, const int32_t *idx, const double *weight,
                      int32_t lo, int32_t hi, int32_t S)
{
    if (hi - lo != S) {
        if (hi > lo && idx[hi - 1] - idx[lo] == hi - 1 - lo) return run_dot(v + idx[lo], weight + lo, hi - lo);
        return gather_dot(v, idx, weight, lo, hi);
    }
    const double *w_row = weight + lo;
    double s = 0.0;
    FC_SIMD_REDUCTION(+, s)
    for (int32_t k = 0; k < S; ++k) s += v[k] * w_row[k];
    return s;
}

/* ------------------------------------------------------------------------ */
/* The dynamic program                                                       */
/* ------------------------------------------------------------------------ */

/* The forward max step over a complete graph, by leaving rows: for each state x,
 * out[x] = max over y of (v[y] + push[y * S + x]), plus e[x], with push a row of
 * scores in leaving-slot order (state y's S slots entering 0..S-1): the values
 * of fc__reduce_edges in the max semiring then the emissions added, as
 * fc__chain_pass makes them (the sources are taken in ascending order and one
 * replaces the best only when strictly greater), with no back pointers.  The
 * targets go in blocks of up to eight, their maxima held in pairs in registers
 * while every source is pushed along a contiguous row. */
static inline void push_pairs(int32_t S, int32_t x0, int pairs, const double *v, const double *push,
                              const double *e, double *out)
{
    fc_pair best[4];
    for (int l = 0; l < pairs; ++l) best[l] = fc_pair_set(-INFINITY);
    for (int32_t y = 0; y < S; ++y) {
        const fc_pair vy = fc_pair_set(v[y]);
        const double *row = push + (int64_t)y * S + x0;
        for (int l = 0; l < pairs; ++l) best[l] = fc_pair_max(fc_pair_add(vy, fc_pair_load(row + 2 * l)), best[l]);
    }
    for (int l = 0; l < pairs; ++l)
        fc_pair_store(out + x0 + 2 * l, fc_pair_add(best[l], fc_pair_load(e + x0 + 2 * l)));
}

static void push_max(int32_t S, const double *v, const double *push, const double *e, double *out)
{
    int32_t x = 0;
    for (; x + 8 <= S; x += 8) push_pairs(S, x, 4, v, push, e, out);
    if (x + 4 <= S) {
        push_pairs(S, x, 2, v, push, e, out);
        x += 4;
    }
    if (x + 2 <= S) {
        push_pairs(S, x, 1, v, push, e, out);
        x += 2;
    }
    if (x < S) {
        double best = -INFINITY;
        for (int32_t y = 0; y < S; ++y) {
            const double c = v[y] + push[(int64_t)y * S + x];
            best = c > best ? c : best;
        }
        out[x] = best + e[x];
    }
}

void fc__reduce_edges(semiring sr, int32_t S, const int32_t *ptr, const int32_t *nbr,
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

void fc__chain_pass(semiring sr, int backward, const fc_graph *g, const fc_scores *sc,
                    const int32_t *cls, const double *emit, int64_t T, const buffers *w,
                    double *table, int32_t *backptr)
{
    const int32_t S = g->num_states, E = g->num_edges;
    if (!backward) {
        for (int32_t s = 0; s < S; ++s) table[s] = sc->start[s] + emit[s];
        for (int64_t t = 1; t < T; ++t) {
            double *row = table + t * S;
            const int64_t r = trans_row(cls, t, E);
            if (sr == SEMIRING_MAX && w->push_ok && !backptr) {
                push_max(S, row - S, w->trans_push + r, emit + t * S, row);
                continue;
            }
            fc__reduce_edges(sr, S, g->in_ptr, g->in_src, NULL, row - S, sc->trans + r, w->exp_trans + r,
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
        fc__reduce_edges(sr, S, g->out_ptr, g->out_dst, g->out_edge, w->vec_b, sc->trans + r,
                         w->exp_trans_out + r, w->trans_max, w->vec_a, table + t * S,
                         backptr ? backptr + t * S : NULL);
    }
}

int fc__rescale(double *row, int32_t S, double *log_factor)
{
    const double m = max_of(row, S);
    if (!(m > 0.0)) return 0;
    const double inverse = 1.0 / m;
    int small = 0;
    FC_SIMD_REDUCTION(|, small)
    for (int32_t s = 0; s < S; ++s) {
        row[s] *= inverse;
        small |= row[s] != 0.0 && row[s] < SCALED_FLOOR;
    }
    *log_factor = log(m);
    return !small;
}

int fc__scaled_pass(int backward, const fc_graph *g, const buffers *w, const int32_t *cls,
                    int64_t T, double *table)
{
    const int32_t S = g->num_states, E = g->num_edges;
    const int complete = (int64_t)g->num_edges == (int64_t)S * S;
    double discarded;
    if (!backward) {
        for (int32_t s = 0; s < S; ++s) table[s] = w->exp_start[s] * w->exp_emit[s];
        if (!fc__rescale(table, S, &w->log_scale[0])) return 0;
        for (int64_t t = 1; t < T; ++t) {
            const double *prev = table + (t - 1) * S, *e = w->exp_emit + t * S;
            const double *m_in = w->exp_trans + trans_row(cls, t, E);
            const double *m_out = w->exp_trans_out + trans_row(cls, t, E);
            double *row = table + t * S;
            if (complete) {   /* row = sum_i prev[i] * M[i, :], M's rows in leaving-slot order */
                for (int32_t j = 0; j < S; ++j) row[j] = 0.0;
                for (int32_t i = 0; i < S; ++i) axpy(prev[i], m_out + (int64_t)i * S, row, S);
                for (int32_t j = 0; j < S; ++j) row[j] *= e[j];
            } else if (w->blocks_ok) {
                fc__forward_blocks(g, w, prev, m_out, e, w->partial, row);
            } else {
                for (int32_t j = 0; j < S; ++j)
                    row[j] = row_dot(prev, g->in_src, m_in, g->in_ptr[j], g->in_ptr[j + 1], S) * e[j];
            }
            if (!fc__rescale(row, S, &w->log_scale[t])) return 0;
        }
        return 1;
    }
    double *v = w->vec_b;
    for (int32_t s = 0; s < S; ++s) table[(T - 1) * S + s] = w->exp_final[s];
    if (!fc__rescale(table + (T - 1) * S, S, &discarded)) return 0;
    for (int64_t t = T - 2; t >= 0; --t) {
        const double *next = table + (t + 1) * S, *e = w->exp_emit + (t + 1) * S;
        const double *m_in = w->exp_trans + trans_row(cls, t + 1, E);
        const double *m_out = w->exp_trans_out + trans_row(cls, t + 1, E);
        double *row = table + t * S;
        for (int32_t s = 0; s < S; ++s) v[s] = e[s] * next[s];
        if (complete) {       /* row = sum_j v[j] * M[:, j], M's columns in entering-edge order */
            for (int32_t i = 0; i < S; ++i) row[i] = 0.0;
            for (int32_t j = 0; j < S; ++j) axpy(v[j], m_in + (int64_t)j * S, row, S);
        } else if (w->blocks_ok) {
            fc__backward_blocks(g, w, v, m_in, w->partial, row);
        } else if (w->lanes_ok) {  /* gather_dot's partial sums, filled state by entered state */
            double *partial = w->partial;
            for (int64_t n = 0; n < 4 * (int64_t)S; ++n) partial[n] = 0.0;
            for (int32_t j = 0; j < S; ++j) {
                const int32_t lo = g->in_ptr[j], hi = g->in_ptr[j + 1];
                if (hi > lo) axpy(v[j], m_in + lo, partial + (int64_t)w->lane[j] * S + g->in_src[lo], hi - lo);
            }
            for (int32_t i = 0; i < S; ++i)
                row[i] = (partial[i] + partial[S + i]) + (partial[2 * S + i] + partial[3 * S + i]);
        } else {
            for (int32_t i = 0; i < S; ++i)
                row[i] = row_dot(v, g->out_dst, m_out, g->out_ptr[i], g->out_ptr[i + 1], S);
        }
        if (!fc__rescale(row, S, &discarded)) return 0;
    }
    return 1;
}

double fc__close_paths(semiring sr, const double *last_row, const double *final,
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

int fc__check_workspace(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                        const fc_workspace *ws, int32_t k)
{
    if (g->num_states <= 0 || sc->num_classes < 1 || ws->k < k) return FC_BAD_ARGUMENT;
    if (sc->emit_class != NULL) {
        if (sc->num_emit_classes < 1 || sc->num_emit_classes > g->num_states) return FC_BAD_ARGUMENT;
        for (int32_t s = 0; s < g->num_states; ++s)
            if (sc->emit_class[s] < 0 || sc->emit_class[s] >= sc->num_emit_classes) return FC_BAD_ARGUMENT;
    }
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t T = b->offsets[i + 1] - b->offsets[i];
        if (T <= 0 || T > ws->t_max) return FC_BAD_ARGUMENT;
    }
    return FC_OK;
}
