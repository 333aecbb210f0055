/*
 * fstcrf_marginals.c -- sum-product forward-backward (log Z, node posteriors,
 * expected edge counts) and max-marginals; see fstcrf_kernel.h for the
 * contract and fstcrf_chain.c for the passes and their numerics.  Also the
 * tables and passes of span probabilities, which fstcrf_chunks.c runs.
 */
#include "fstcrf_internal.h"

/* Edge posteriors are formed as p_i * exp_trans_e * q_j * c; the fast form is
 * used while c stays below exp(MAX_LOG_SCALE), so a product lost to underflow
 * is below 1e-308 * 1e250. */
#define MAX_LOG_SCALE 575.0

/* ------------------------------------------------------------------------ */
/* Sum-product                                                               */
/* ------------------------------------------------------------------------ */

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

/* Expected edge counts of a sentence from its scaled tables: at token t >= 1
 * the edge from i into j adds alpha_{t-1}(i) * exp_trans[e] * q_t(j), where
 * sum over edges into j of alpha_{t-1}(i) M_ij equals alpha_t(j) * row max /
 * exp_emit, so q_t(j) = exp_emit[t, j] * beta_t(j) / (row max * norm_t); q_t
 * is in exp_emit's row t (add_posteriors).  The loops run state by state,
 * then token by token, so a state's entering edges, their scores and counts
 * stay in cache through the sentence; every count still receives its
 * additions in token order. */
static void scaled_edge_counts(const fc_graph *g, const buffers *w, const int32_t *cls, int64_t T,
                               double *edge_counts)
{
    const int32_t S = g->num_states, E = g->num_edges;
    for (int32_t j = 0; j < S; ++j) {
        const int32_t lo = g->in_ptr[j], n = g->in_ptr[j + 1] - lo;
        if (n == 0) continue;
        const int32_t first = g->in_src[lo];
        /* consecutive sources (all S of them, or a second-order chain's): contiguous */
        const int consecutive = g->in_src[lo + n - 1] - first == n - 1;
        for (int64_t t = 1; t < T; ++t) {
            const double q = w->exp_emit[t * S + j];
            if (q == 0.0) continue;
            const int64_t r = trans_row(cls, t, E) + lo;
            double *counts = edge_counts + r;
            const double *m = w->exp_trans + r, *prev = w->alpha + (t - 1) * S;
            if (consecutive) {
                const double *source = prev + first;
                FC_SIMD
                for (int32_t i = 0; i < n; ++i) counts[i] += source[i] * m[i] * q;
            } else {
                for (int32_t k = 0; k < n; ++k) counts[k] += prev[g->in_src[lo + k]] * m[k] * q;
            }
        }
    }
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
        /* q_t(j), the weight of the edges into j at token t, replaces exp_emit's row t,
         * which is not read again */
        double *e = w->exp_emit + t * S;
        const double factor = 1.0 / (exp(w->log_scale[t]) * norm);
        for (int32_t j = 0; j < S; ++j) e[j] = e[j] * bt[j] * factor;
    }
    if (scaled && edge_counts) {
        if (w->blocks_ok && cls == NULL)
            fc__edge_count_blocks(g, w, T, edge_counts);
        else
            scaled_edge_counts(g, w, cls, T, edge_counts);
    }
}

int fc__sentence_posteriors(const fc_graph *g, const fc_scores *sc, buffers *w, const double *emit,
                            const int32_t *cls, int64_t T, double *log_z, double *node_marg, double *edge_counts)
{
    const int32_t S = g->num_states;
    const int backward_needed = node_marg != NULL || edge_counts != NULL;
    int scaled = w->scaled_ok;
    for (int64_t t = 0; t < T; ++t)
        w->emit_max[t] = sc->emit_class != NULL
                             ? fc__exp_shifted_by_class(emit + t * S, S, sc->emit_class, sc->num_emit_classes,
                                                        w->vec_a /* and vec_b: [2, S] */, w->exp_emit + t * S,
                                                        &scaled)
                             : fc__exp_shifted(emit + t * S, S, w->exp_emit + t * S, &scaled);
    scaled = scaled && fc__scaled_pass(0, g, w, cls, T, w->alpha)
             && (!backward_needed || fc__scaled_pass(1, g, w, cls, T, w->beta));
    double lz;
    if (scaled) {
        lz = scaled_log_z(g, w, T);
    } else {
        fc__chain_pass(SEMIRING_LOG, 0, g, sc, cls, emit, T, w, w->alpha, NULL);
        lz = fc__close_paths(SEMIRING_LOG, w->alpha + (T - 1) * S, sc->final, S, w->vec_a, NULL);
        if (backward_needed && lz > -INFINITY)
            fc__chain_pass(SEMIRING_LOG, 1, g, sc, cls, emit, T, w, w->beta, NULL);
    }
    *log_z = lz;
    if (lz == -INFINITY) {
        if (node_marg)
            for (int64_t n = 0; n < T * S; ++n) node_marg[n] = 0.0;
        return -1;
    }
    if (backward_needed) add_posteriors(scaled, g, sc, w, cls, emit, T, node_marg, edge_counts);
    return scaled;
}

/* fc_forward_backward, with sentence i's expected edge counts added at
 * edge_counts + i * stride (stride 0: all sentences' into one [C, E]). */
static int posteriors_of_batch(const fc_graph *g, const fc_scores *sc, const fc_batch *b, double *log_z,
                               double *node_marg, double *edge_counts, int64_t stride, fc_workspace *ws)
{
    int status = fc__check_workspace(g, sc, b, ws, 1);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states;
    buffers w = fc__carve(g, sc, ws);
    fc__prepare_transitions(g, sc, &w);
    fc__plan_blocks(g, &w);
    if (!w.blocks_ok && (node_marg != NULL || edge_counts != NULL)) fc__plan_lanes(g, &w);
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        if (fc__sentence_posteriors(g, sc, &w, b->emit + off * S, cls, T, log_z + i,
                                    node_marg ? node_marg + off * S : NULL,
                                    edge_counts ? edge_counts + i * stride : NULL) < 0)
            status = FC_INFEASIBLE;
    }
    return status;
}

int fc_forward_backward(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                        double *log_z, double *node_marg, double *edge_counts,
                        fc_workspace *ws)
{
    return posteriors_of_batch(g, sc, b, log_z, node_marg, edge_counts, 0, ws);
}

int fc_forward_backward_each(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                             double *log_z, double *node_marg, double *edge_counts,
                             fc_workspace *ws)
{
    return posteriors_of_batch(g, sc, b, log_z, node_marg, edge_counts, (int64_t)sc->num_classes * g->num_edges, ws);
}

/* ------------------------------------------------------------------------ */
/* Max-marginals                                                             */
/* ------------------------------------------------------------------------ */

int fc_max_marginals(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                     double *max_marg, double *best, fc_workspace *ws)
{
    int status = fc__check_workspace(g, sc, b, ws, 1);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states;
    buffers w = fc__carve(g, sc, ws);
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const double *emit = b->emit + off * S;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        fc__chain_pass(SEMIRING_MAX, 0, g, sc, cls, emit, T, &w, w.alpha, NULL);
        fc__chain_pass(SEMIRING_MAX, 1, g, sc, cls, emit, T, &w, w.beta, NULL);
        best[i] = fc__close_paths(SEMIRING_MAX, w.alpha + (T - 1) * S, sc->final, S, w.vec_a, NULL);
        if (best[i] == -INFINITY) status = FC_INFEASIBLE;
        double *out = max_marg + off * S;
        for (int64_t n = 0; n < T * S; ++n) out[n] = w.alpha[n] + w.beta[n];
    }
    return status;
}

/* ------------------------------------------------------------------------ */
/* Log-domain tables for span probabilities                                  */
/* ------------------------------------------------------------------------ */

int fc_log_tables(const fc_graph *g, const fc_scores *sc, const fc_batch *b, double *log_alpha, double *log_beta,
                  fc_workspace *ws)
{
    int status = fc__check_workspace(g, sc, b, ws, 1);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states;
    buffers w = fc__carve(g, sc, ws);
    fc__prepare_transitions(g, sc, &w);
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const double *emit = b->emit + off * S;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        fc__chain_pass(SEMIRING_LOG, 0, g, sc, cls, emit, T, &w, log_alpha + off * S, NULL);
        fc__chain_pass(SEMIRING_LOG, 1, g, sc, cls, emit, T, &w, log_beta + off * S, NULL);
    }
    return FC_OK;
}

/* ------------------------------------------------------------------------ */
/* Linear-domain tables for span probabilities                               */
/* ------------------------------------------------------------------------ */

/* Rows whose mass before rescaling is below this are not exact to rounding (see
 * fc__scaled_sentence): their sentence is redone in the log domain. */
#define SPAN_MASS_FLOOR 1e-100

/* Divide row [S] by its sum and give log(sum) + before; 0 if the sum is below
 * SPAN_MASS_FLOOR or not finite. */
static int rescale_row(double *row, int32_t S, double before, double *log_scale)
{
    double sum = 0.0;
    for (int32_t s = 0; s < S; ++s) sum += row[s];
    if (!(sum >= SPAN_MASS_FLOOR) || !isfinite(sum)) return 0;
    const double inverse = 1.0 / sum;
    for (int32_t s = 0; s < S; ++s) row[s] *= inverse;
    *log_scale = before + log(sum);
    return 1;
}

int fc__scaled_sentence(const fc_graph *g, const double *weight, const double *start, const double *final,
                           const fc_batch *b, int64_t off, int64_t last, double *alpha, double *beta,
                           double *log_prefix, double *log_suffix)
{
    const int32_t S = g->num_states, E = g->num_edges;
    const double *psi = b->emit;
    for (int32_t s = 0; s < S; ++s) alpha[off * S + s] = start[s] * psi[off * S + s];
    if (!rescale_row(alpha + off * S, S, 0.0, &log_prefix[off])) return 0;
    for (int64_t n = off + 1; n <= last; ++n) {
        const double *prev = alpha + (n - 1) * S, *w = weight + trans_row(b->token_class, n, E);
        double *row = alpha + n * S;
        for (int32_t j = 0; j < S; ++j) {
            double sum = 0.0;
            for (int32_t e = g->in_ptr[j]; e < g->in_ptr[j + 1]; ++e) sum += prev[g->in_src[e]] * w[e];
            row[j] = sum * psi[n * S + j];
        }
        if (!rescale_row(row, S, log_prefix[n - 1], &log_prefix[n])) return 0;
    }
    for (int32_t s = 0; s < S; ++s) beta[last * S + s] = final[s];
    if (!rescale_row(beta + last * S, S, 0.0, &log_suffix[last])) return 0;
    for (int64_t n = last - 1; n >= off; --n) {
        const double *next = beta + (n + 1) * S, *after = psi + (n + 1) * S;
        const double *w = weight + trans_row(b->token_class, n + 1, E);
        double *row = beta + n * S;
        for (int32_t s = 0; s < S; ++s) {
            double sum = 0.0;
            for (int32_t k = g->out_ptr[s]; k < g->out_ptr[s + 1]; ++k) {
                const int32_t j = g->out_dst[k];
                sum += w[g->out_edge[k]] * after[j] * next[j];
            }
            row[s] = sum;
        }
        if (!rescale_row(row, S, log_suffix[n + 1], &log_suffix[n])) return 0;
    }
    return 1;
}


void fc__span_pass(const fc_graph *g, const fc_batch *b, const fc__span_tables *t, int64_t off, int64_t last,
                   double log_z, int32_t x, int64_t row, int64_t reach, double *out, double *mass)
{
    const int32_t S = g->num_states, E = g->num_edges;
    const double *psi = b->emit, *weight = t->weight, *final = t->final;
    const int32_t *state_type = t->state_type;
    const uint8_t *continuing = t->continuing;
    double *now = mass, *next = mass + S;
    double log_scale = 0.0;
    for (int64_t j = 0; j <= reach; ++j) out[j] = 0.0;
    /* the mass of the paths whose chunk of type x begins at the head's token */
    if (row == off) {
        for (int32_t s = 0; s < S; ++s) now[s] = state_type[s] == x ? t->start[s] * psi[row * S + s] : 0.0;
    } else {
        const double *prev = t->alpha + (row - 1) * S, *w = weight + trans_row(b->token_class, row, E);
        for (int32_t s = 0; s < S; ++s) {
            double sum = 0.0;
            if (state_type[s] == x)
                for (int32_t e = g->in_ptr[s]; e < g->in_ptr[s + 1]; ++e)
                    if (!continuing[e]) sum += prev[g->in_src[e]] * w[e];
            now[s] = sum * psi[row * S + s];
        }
        log_scale = t->log_prefix[row - 1];
    }
    for (int64_t j = 0; j <= reach; ++j, ++row) {
        if (j > 0) {  /* the chunk goes on into this token */
            const double *w = weight + trans_row(b->token_class, row, E);
            for (int32_t s = 0; s < S; ++s) {
                double sum = 0.0;
                if (state_type[s] == x)
                    for (int32_t e = g->in_ptr[s]; e < g->in_ptr[s + 1]; ++e)
                        if (continuing[e]) sum += now[g->in_src[e]] * w[e];
                next[s] = sum * psi[row * S + s];
            }
            double *swap = now;
            now = next;
            next = swap;
        }
        double total = 0.0;
        for (int32_t s = 0; s < S; ++s) total += now[s];
        if (!(total > 0.0))
            break;  /* no longer chunk of the type from this token */
        for (int32_t s = 0; s < S; ++s) now[s] /= total;
        log_scale += log(total);
        double closing = 0.0, log_after = 0.0;
        if (row == last) {
            for (int32_t s = 0; s < S; ++s) closing += now[s] * final[s];
        } else {  /* it ends: an edge into the next token that does not continue it */
            const double *w = weight + trans_row(b->token_class, row + 1, E);
            const double *after = psi + (row + 1) * S, *back = t->beta + (row + 1) * S;
            for (int32_t s = 0; s < S; ++s) {
                double sum = 0.0;
                for (int32_t e = g->in_ptr[s]; e < g->in_ptr[s + 1]; ++e)
                    if (!continuing[e]) sum += now[g->in_src[e]] * w[e];
                closing += sum * after[s] * back[s];
            }
            log_after = t->log_suffix[row + 1];
        }
        if (closing > 0.0) {
            const double value = exp(log_scale + log(closing) + log_after - log_z);
            out[j] = value < 1.0 ? value : 1.0;
        }
    }
}
