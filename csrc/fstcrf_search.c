/*
 * fstcrf_search.c -- best paths: Viterbi, span Viterbi and the k best; see
 * fstcrf_kernel.h for the contract.  All run fc__chain_pass or
 * fc__reduce_edges (fstcrf_chain.c) in the max semiring.
 */
#include "fstcrf_internal.h"

/* ------------------------------------------------------------------------ */
/* Max-product                                                               */
/* ------------------------------------------------------------------------ */

/* The back pointer of state s at a token whose previous row of the forward
 * table is v [S] and whose transition scores are trans [E]: the first
 * entering source y with the largest v[y] + score, or -1 when none is above
 * -inf.  fc__reduce_edges' arg, taken over the same slots in the same order:
 * Viterbi over pushed rows (fc__prepare_push) keeps no back pointers and
 * finds those of its path here, S sums a token in place of S * S. */
static int32_t pulled_source(const fc_graph *g, const double *v, const double *trans, int32_t s)
{
    double best = -INFINITY;
    int32_t source = -1;
    for (int32_t k = g->in_ptr[s]; k < g->in_ptr[s + 1]; ++k) {
        const double c = v[g->in_src[k]] + trans[k];
        if (c > best) { best = c; source = g->in_src[k]; }
    }
    return source;
}

int fc_viterbi(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
               int32_t *path, double *score, fc_workspace *ws)
{
    int status = fc__check_workspace(g, sc, b, ws, 1);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states;
    buffers w = fc__carve(g, sc, ws);
    fc__prepare_push(g, sc, b->offsets[b->num_sequences] - b->offsets[0], &w);
    int32_t *backptr = w.push_ok ? NULL : w.backptr;
    for (int32_t i = 0; i < b->num_sequences; ++i) {
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        fc__chain_pass(SEMIRING_MAX, 0, g, sc, cls, b->emit + off * S, T, &w, w.alpha, backptr);
        int32_t s = -1;
        score[i] = fc__close_paths(SEMIRING_MAX, w.alpha + (T - 1) * S, sc->final, S, w.vec_a, &s);
        if (s < 0) {
            status = FC_INFEASIBLE;
            for (int64_t t = 0; t < T; ++t) path[off + t] = -1;
            continue;
        }
        for (int64_t t = T - 1; t >= 0; --t) {
            path[off + t] = s;
            if (t > 0 && s >= 0)
                s = backptr ? backptr[t * S + s]
                            : pulled_source(g, w.alpha + (t - 1) * S, sc->trans + trans_row(cls, t, g->num_edges), s);
        }
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
    int status = fc__check_workspace(g, sc, b, ws, 3);
    if (status == FC_OK)
        status = check_spans(b, num_spans, span_sentence, span_first, span_length, mask_offsets,
                             path_offsets);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states, E = g->num_edges;
    const int64_t cells = ws->t_max * S;
    buffers w = fc__carve(g, sc, ws);
    int32_t *pred = w.backptr, *succ = pred + cells, *span_pred = succ + cells;
    double *constrained = w.kscore;
    for (int32_t k = 0; k < num_spans; ++k) {
        const int32_t i = span_sentence[k];
        const int64_t off = b->offsets[i], T = b->offsets[i + 1] - off;
        const double *emit = b->emit + off * S;
        const int32_t *cls = b->token_class ? b->token_class + off : NULL;
        if (k == 0 || i != span_sentence[k - 1]) {
            fc__chain_pass(SEMIRING_MAX, 0, g, sc, cls, emit, T, &w, w.alpha, pred);
            fc__chain_pass(SEMIRING_MAX, 1, g, sc, cls, emit, T, &w, w.beta, succ);
            if (fc__close_paths(SEMIRING_MAX, w.alpha + (T - 1) * S, sc->final, S, w.vec_a, NULL)
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
                fc__reduce_edges(SEMIRING_MAX, S, g->in_ptr, g->in_src, NULL, row - S, sc->trans + r,
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
    int status = fc__check_workspace(g, sc, b, ws, k);
    if (status != FC_OK) return status;
    const int32_t S = g->num_states, E = g->num_edges;
    const int64_t N = b->offsets[b->num_sequences];
    buffers w = fc__carve(g, sc, ws);
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
