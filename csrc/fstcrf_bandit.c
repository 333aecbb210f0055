/*
 * fstcrf_bandit.c -- the bandit learner's per-minibatch work (see the header).
 */
#include <math.h>
#include <stddef.h>

#include "fstcrf_bandit.h"
#include "fstcrf_internal.h"

/* The rows of tokens first .. last-1 of the set. */
static ff_tokens token_block(const fb_set *set, int64_t first, int64_t last)
{
    ff_tokens x = *set->tokens;
    x.num_tokens = last - first;
    x.indptr = set->tokens->indptr + first;
    return x;
}

/* Doubles in a cache line. */
#define LINE_DOUBLES 8

/* Ask for every cache line of doubles first .. last-1 (last > first) of an array. */
static void prefetch_range(const double *array, int64_t first, int64_t last)
{
    const double *end = array + last;
    for (const double *at = array + first; at < end; at += LINE_DOUBLES) FC_PREFETCH(at);
    FC_PREFETCH(end - 1);
}

/* prefetch_range into the second-level cache. */
static void prefetch_range_l2(const double *array, int64_t first, int64_t last)
{
    const double *end = array + last;
    for (const double *at = array + first; at < end; at += LINE_DOUBLES) FC_PREFETCH_L2(at);
    FC_PREFETCH_L2(end - 1);
}

/* Ask for the lines of the step state [F, width] at the features of the predicates
 * of tokens rows first .. last-1 of x, into the second-level cache: the step reads
 * them after the rest of the minibatch's work, which keeps the first for its own. */
static void request_step_lines(const ff_dictionary *d, const ff_tokens *x, int64_t first, int64_t last,
                               const double *state, int32_t width)
{
    for (int64_t j = x->indptr[first]; j < x->indptr[last]; ++j) {
        const int32_t p = x->indices[j];
        if (d->ptr[p + 1] > d->ptr[p]) prefetch_range_l2(state, width * d->ptr[p], width * d->ptr[p + 1]);
    }
}

/* fb_draw's work on one piece, sentences first .. last-1 (b sentences): their offsets
 * [b+1] (from 0), emissions, log_z, marginals and edge counts (when marg is not NULL)
 * at the pointers given,
 * draw r's states at paths + r * stride, sentence i's seeded by (seed, i, r). */
static int draw_piece(const fb_set *set, int64_t first, int64_t last, const fc_scores *sc, const double *theta,
                      double sign, uint64_t seed, int32_t num_draws, int64_t *offsets, double *emit, double *log_z,
                      double *marg, double *edge_counts, int32_t *paths, int64_t stride, fc_workspace *ws,
                      double *work, const double *step_state, int32_t state_width)
{
    const fc_graph *g = set->graph;
    const int32_t S = g->num_states;
    const int64_t row = set->offsets[first], b = last - first;
    const int64_t per_sentence = (int64_t)sc->num_classes * g->num_edges;
    for (int64_t i = 0; i <= b; ++i) offsets[i] = set->offsets[first + i] - row;
    const ff_tokens x = token_block(set, row, set->offsets[last]);
    int status = ff_emissions(set->dictionary, &x, theta, sign, emit, work);
    if (status != FC_OK) return status;
    const int32_t *token_class = set->token_class ? set->token_class + row : NULL;
    const fc_batch batch = {(int32_t)b, offsets, emit, token_class};
    status = fc__check_workspace(g, sc, &batch, ws, 1);
    if (status != FC_OK) return status;
    buffers w = fc__carve(g, sc, ws);
    fc__prepare_transitions(g, sc, &w);
    fc__plan_blocks(g, &w);
    if (marg != NULL) {
        if (!w.blocks_ok) fc__plan_lanes(g, &w);
        for (int64_t i = 0; i < b * per_sentence; ++i) edge_counts[i] = 0.0;
    }
    /* fc_forward_backward_each's loop, then fc_sample_scaled's draws of the sentence
     * from the forward table it leaves (when it is the scaled one), with the step's
     * lines of each sentence asked for while its posteriors are computed: the step
     * finds them in cache */
    int infeasible = 0;
    for (int64_t i = 0; i < b; ++i) {
        if (step_state != NULL)
            request_step_lines(set->dictionary, &x, offsets[i], offsets[i + 1], step_state, state_width);
        const int64_t off = offsets[i], T = offsets[i + 1] - off;
        const int32_t *cls = token_class ? token_class + off : NULL;
        const int table = fc__sentence_posteriors(g, sc, &w, emit + off * S, cls, T, log_z + i,
                                                  marg != NULL ? marg + off * S : NULL,
                                                  marg != NULL ? edge_counts + i * per_sentence : NULL);
        infeasible |= table < 0;
        if (infeasible || num_draws == 0) continue;
        infeasible |= fc__sample_scaled_sentence(table, g, sc, &w, emit + off * S, cls, T, seed, i, num_draws,
                                                 stride, paths + off) != FC_OK;
    }
    return infeasible ? FC_INFEASIBLE : FC_OK;
}

int fb_draw(const fb_set *set, const int64_t *bounds, int32_t num_pieces, int32_t piece_begin, int32_t piece_end,
            const fc_scores *sc, const double *theta, double sign, uint64_t seed, int32_t num_draws,
            int64_t *offsets, double *emit, double *log_z, double *marg, double *edge_counts, int32_t *paths,
            fc_workspace *ws, double *work, const double *step_state, int32_t state_width)
{
    const int32_t S = set->graph->num_states;
    const int64_t row = set->offsets[bounds[0]], n = set->offsets[bounds[num_pieces]] - row;
    const int64_t per_sentence = (int64_t)sc->num_classes * set->graph->num_edges;
    for (int32_t q = piece_begin; q < piece_end; ++q) {
        const int64_t i = bounds[q] - bounds[0], t = set->offsets[bounds[q]] - row;
        const int status = draw_piece(set, bounds[q], bounds[q + 1], sc, theta, sign, seed + (uint64_t)q,
                                      num_draws, offsets + i + q, emit + t * S, log_z + i,
                                      marg != NULL ? marg + t * S : NULL,
                                      marg != NULL ? edge_counts + i * per_sentence : NULL, paths + t, n, ws,
                                      work, step_state, state_width);
        if (status != FC_OK) return status;
    }
    return FC_OK;
}

/* fb_gradient's work on one piece, sentences first .. last-1 (b sentences, offsets
 * [b+1] from 0): draw k's weights at coef + k * coef_stride and states at
 * paths + k * path_stride, marks [n, S] and marg [n, S] (or NULL: no expectation
 * term) its tokens' rows. */
static int gradient_piece(const fb_set *set, int64_t first, int64_t last, int32_t num_draws, const double *coef,
                          int64_t coef_stride, const int32_t *paths, int64_t path_stride, const int64_t *offsets,
                          const double *marg, double sign, double *marks, const int64_t *at, double *grad,
                          double *work)
{
    const int32_t S = set->graph->num_states;
    const int64_t b = last - first;
    const ff_tokens x = token_block(set, set->offsets[first], set->offsets[last]);
    for (int64_t i = 0; i < b; ++i) {
        /* w_i summed over the draws in order, as numpy sums the rows of [K, b] */
        double w = coef[i];
        for (int32_t k = 1; k < num_draws; ++k) w += coef[k * coef_stride + i];
        for (int64_t t = offsets[i]; t < offsets[i + 1]; ++t)
            for (int32_t s = 0; s < S; ++s) marks[t * S + s] = marg != NULL ? marg[t * S + s] * -w : 0.0;
        for (int32_t k = 0; k < num_draws; ++k) {
            const double c = coef[k * coef_stride + i];
            const int32_t *path = paths + k * path_stride;
            for (int64_t t = offsets[i]; t < offsets[i + 1]; ++t) marks[t * S + path[t]] += c;
        }
    }
    return ff_accumulate_at(set->dictionary, &x, marks, sign, at, grad, NULL, work);
}

/* Whether every state of the K draws paths [K, n] of sentences first .. last-1 (n
 * tokens) lies in [0, S) and every two consecutive states of a sentence are joined
 * by an edge. */
static int paths_allowed(const fb_set *set, int64_t first, int64_t last, int32_t num_draws, const int32_t *paths)
{
    const int32_t S = set->graph->num_states;
    const int64_t row = set->offsets[first], n = set->offsets[last] - row;
    for (int64_t j = 0; j < num_draws * n; ++j)
        if (paths[j] < 0 || paths[j] >= S) return 0;
    for (int32_t k = 0; k < num_draws; ++k)
        for (int64_t i = first; i < last; ++i)
            for (int64_t t = set->offsets[i] - row + 1; t < set->offsets[i + 1] - row; ++t)
                if (set->edge_ids[(int64_t)paths[k * n + t - 1] * S + paths[k * n + t]] < 0) return 0;
    return 1;
}

/* counts [K, C, E] += each draw's weighted edge uses (fb_gradient's counts) of
 * sentences first .. last-1, whose paths paths_allowed accepted. */
static void count_edges(const fb_set *set, int64_t first, int64_t last, int32_t num_draws, const double *coef,
                        const int32_t *paths, int32_t num_classes, double *counts)
{
    const int32_t S = set->graph->num_states, E = set->graph->num_edges;
    const int64_t row = set->offsets[first], n = set->offsets[last] - row, CE = (int64_t)num_classes * E;
    const int32_t *token_class = set->token_class ? set->token_class + row : NULL;
    for (int32_t k = 0; k < num_draws; ++k) {
        const int32_t *path = paths + k * n;
        double *out = counts + k * CE;
        for (int64_t i = first; i < last; ++i) {
            const double c = coef[k * (last - first) + (i - first)];
            for (int64_t t = set->offsets[i] - row + 1; t < set->offsets[i + 1] - row; ++t) {
                const int64_t cls = token_class ? token_class[t] : 0;
                out[cls * E + set->edge_ids[(int64_t)path[t - 1] * S + path[t]]] += c;
            }
        }
    }
}

int fb_gradient(const fb_set *set, const int64_t *bounds, int32_t num_pieces, int32_t piece_begin,
                int32_t piece_end, int32_t num_draws, const double *coef, const int32_t *paths,
                const int64_t *offsets, const double *marg, double sign, double *marks, const fb_layout *layout,
                double *work, int32_t num_classes, double *counts)
{
    const int32_t S = set->graph->num_states;
    const int64_t first = bounds[0], last = bounds[num_pieces];
    const int64_t row = set->offsets[first], n = set->offsets[last] - row, b = last - first;
    if (layout->num_predicates != set->dictionary->num_predicates) return FC_BAD_ARGUMENT;
    if (!paths_allowed(set, first, last, num_draws, paths)) return FC_BAD_ARGUMENT;
    if (counts != NULL) count_edges(set, first, last, num_draws, coef, paths, num_classes, counts);
    for (int32_t q = piece_begin; q < piece_end; ++q) {
        const int64_t i = bounds[q] - first, t = set->offsets[bounds[q]] - row;
        const double *piece_marg = marg != NULL ? marg + t * S : NULL;
        const int status = gradient_piece(set, bounds[q], bounds[q + 1], num_draws, coef + i, b, paths + t, n,
                                          offsets + i + q, piece_marg, sign, marks + t * S, layout->at,
                                          layout->buffers[q], work);
        if (status != FC_OK) return status;
    }
    return FC_OK;
}

/* Features handed to fu_apply at once. */
#define STEP_CHUNK 64

/* The index of the lowest set bit of a non-zero word (de Bruijn multiplication). */
static int lowest_bit(uint64_t word)
{
    static const int position[64] = {
        0,  1,  2,  53, 3,  7,  54, 27, 4,  38, 41, 8,  34, 55, 48, 28, 62, 5,  39, 46, 44, 42,
        22, 9,  24, 35, 59, 56, 49, 18, 29, 11, 63, 52, 6,  26, 37, 40, 33, 47, 61, 45, 43, 21,
        23, 58, 17, 10, 51, 25, 36, 32, 60, 20, 57, 16, 50, 31, 19, 15, 30, 14, 13, 12};
    return position[((word & (~word + 1)) * 0x022FDD63CC95386DULL) >> 58];
}

/* fu_apply's Adam at one feature, theta and its (moment, square) pair, by gradient g:
 * the same expressions, so the same results bit for bit. */
static inline void adam_feature(const fu_step *step, double *theta, double *pair, double g)
{
    pair[0] = step->beta1 * pair[0] + (1.0 - step->beta1) * g;
    pair[1] = step->beta2 * pair[1] + (1.0 - step->beta2) * g * g;
    *theta += step->rate * pair[0] / (sqrt(pair[1]) + step->epsilon);
}

/* Adam at the n consecutive features of theta [n] whose moments and squares are
 * interleaved in pairs [n, 2], by the gradient 0 + a[i] (+ b[i] when b is not
 * NULL), which is then cleared: no copy of the gradient is made. */
static void adam_pairs(const fu_step *step, double *theta, double *pairs, double *a, double *b, int64_t n)
{
    if (b == NULL) {
        FC_SIMD
        for (int64_t i = 0; i < n; ++i) {
            const double g = 0.0 + a[i];
            a[i] = 0.0;
            adam_feature(step, theta + i, pairs + 2 * i, g);
        }
    } else {
        FC_SIMD
        for (int64_t i = 0; i < n; ++i) {
            const double g = 0.0 + a[i] + b[i];
            a[i] = b[i] = 0.0;
            adam_feature(step, theta + i, pairs + 2 * i, g);
        }
    }
}

/* The step at the features of predicate p, whose gradient is at `offset` of the
 * buffers whose bit is set in `pieces` (the others hold 0 there: adding it would
 * not change the sum); Adam reads the gradient of one or two pieces in place. */
static int step_predicate(const ff_dictionary *d, int32_t p, int64_t offset, double *const *buffers,
                          uint32_t pieces, const fu_step *step, double *theta, double *state)
{
    const uint32_t later = pieces & (pieces - 1); /* the bits after the lowest */
    if (step->rule == FU_ADAM && state != NULL && pieces != 0 && (later & (later - 1)) == 0) {
        const int64_t f = d->ptr[p];
        double *b = later != 0 ? buffers[lowest_bit(later)] + offset : NULL;
        adam_pairs(step, theta + f, state + 2 * f, buffers[lowest_bit(pieces)] + offset, b, d->ptr[p + 1] - f);
        return 0;
    }
    int64_t index[STEP_CHUNK];
    double g[STEP_CHUNK];
    int status = 0;
    for (int64_t f = d->ptr[p]; f < d->ptr[p + 1]; f += STEP_CHUNK) {
        const int64_t m = d->ptr[p + 1] - f < STEP_CHUNK ? d->ptr[p + 1] - f : STEP_CHUNK;
        for (int64_t i = 0; i < m; ++i) {
            g[i] = 0.0;
            index[i] = f + i;
        }
        for (uint32_t rest = pieces; rest != 0; rest &= rest - 1) {
            double *buffer = buffers[lowest_bit(rest)] + offset + (f - d->ptr[p]);
            for (int64_t i = 0; i < m; ++i) {
                g[i] += buffer[i];
                buffer[i] = 0.0;
            }
        }
        if (step->rule == FU_ADAM && state != NULL)
            adam_pairs(step, theta + f, state + 2 * f, g, NULL, m);
        else
            status |= fu_apply(step, theta, state, NULL, index, g, m);
    }
    return status;
}

/* Predicates stepped ahead of the one being stepped: their lines are prefetched. */
#define STEP_AHEAD 16

/* Ask for the cache lines of the features of predicate p in theta and the step's
 * state (a minibatch's buffers are small enough to stay in cache). */
static void prefetch_predicate(const ff_dictionary *d, int32_t p, const double *theta, const double *state,
                               int64_t state_width)
{
    const int64_t f = d->ptr[p], end = d->ptr[p + 1];
    if (end <= f) return;
    prefetch_range(theta, f, end);
    if (state != NULL) prefetch_range(state, state_width * f, state_width * end);
}

int fb_index(const fb_set *set, fb_layout *layout, const int64_t *piece_rows, int32_t num_pieces)
{
    if (num_pieces < 1 || num_pieces > layout->num_buffers || piece_rows[0] < 0) return FC_BAD_ARGUMENT;
    if (layout->num_predicates != set->dictionary->num_predicates) return FC_BAD_ARGUMENT;
    for (int32_t q = 0; q < num_pieces; ++q)
        if (piece_rows[q + 1] < piece_rows[q]) return FC_BAD_ARGUMENT;
    if (piece_rows[num_pieces] > set->tokens->num_tokens) return FC_BAD_ARGUMENT;
    const int64_t *indptr = set->tokens->indptr;
    const int32_t *indices = set->tokens->indices;
    const ff_dictionary *d = set->dictionary;
    uint64_t *seen = layout->seen;
    int32_t *order = layout->order;
    uint8_t *pieces_of = layout->pieces_of;
    int64_t *at = layout->at;
    for (int64_t j = indptr[piece_rows[0]]; j < indptr[piece_rows[num_pieces]]; ++j) {
        if (indices[j] < 0 || indices[j] >= d->num_predicates) return FC_BAD_ARGUMENT;
        FC_PREFETCH(at + indices[j]); /* written below, in another order */
    }
    const int64_t words = ((int64_t)d->num_predicates + 63) / 64;
    /* a bit per predicate and piece, and in row Q a bit per word that has any */
    uint64_t *summary = seen + num_pieces * words;
    for (int32_t q = 0; q < num_pieces; ++q) {
        uint64_t *marks = seen + q * words;
        for (int64_t j = indptr[piece_rows[q]]; j < indptr[piece_rows[q + 1]]; ++j) {
            const int32_t p = indices[j];
            marks[p >> 6] |= (uint64_t)1 << (p & 63);
            summary[p >> 12] |= (uint64_t)1 << ((p >> 6) & 63);
        }
    }
    /* in ascending order, which keeps the weight arrays' accesses close together */
    int64_t m = 0, features = 0;
    for (int64_t group = 0; group < (words + 63) / 64; ++group) {
        for (uint64_t used = summary[group]; used != 0; used &= used - 1) {
            const int64_t word = group * 64 + lowest_bit(used);
            uint64_t any = 0;
            for (int32_t q = 0; q < num_pieces; ++q) any |= seen[q * words + word];
            for (uint64_t bits = any; bits != 0; bits &= bits - 1) {
                const int bit = lowest_bit(bits);
                const int32_t p = (int32_t)(word * 64 + bit);
                uint8_t pieces = 0;
                for (int32_t q = 0; q < num_pieces; ++q)
                    pieces |= (uint8_t)(((seen[q * words + word] >> bit) & 1) << q);
                order[m] = p;
                pieces_of[m++] = pieces;
                at[p] = features;
                features += d->ptr[p + 1] - d->ptr[p];
            }
            for (int32_t q = 0; q < num_pieces; ++q) seen[q * words + word] = 0;
        }
        summary[group] = 0;
    }
    layout->used_predicates = m;
    layout->used_features = features;
    return FC_OK;
}

/* fu_apply at the T transitions' weights theta [T] by their gradient g [T], which is
 * then cleared, a chunk of coordinates at a time (the same arithmetic). */
static int step_transitions(const fu_step *step, double *theta, double *squares, double *moments, double *g,
                            int64_t num_transitions)
{
    int64_t index[STEP_CHUNK];
    int status = 0;
    for (int64_t j = 0; j < num_transitions; j += STEP_CHUNK) {
        const int64_t m = num_transitions - j < STEP_CHUNK ? num_transitions - j : STEP_CHUNK;
        for (int64_t i = 0; i < m; ++i) index[i] = j + i;
        status |= fu_apply(step, theta, squares, moments, index, g + j, m);
    }
    for (int64_t j = 0; j < num_transitions; ++j) g[j] = 0.0;
    return status;
}

int fb_step(const fb_set *set, fb_layout *layout, int64_t begin, int64_t end, const fu_step *step, double *theta,
            double *state, double *transitions, int64_t num_transitions, double *squares, double *moments)
{
    const ff_dictionary *d = set->dictionary;
    const int32_t *order = layout->order;
    const uint8_t *pieces_of = layout->pieces_of;
    int64_t *at = layout->at;
    const int32_t num_pieces = layout->num_buffers;
    if (layout->num_predicates != d->num_predicates) return FC_BAD_ARGUMENT;
    for (int64_t i = begin; i < end; ++i)
        if (order[i] < 0 || order[i] >= d->num_predicates || at[order[i]] < 0 || pieces_of[i] >> num_pieces != 0)
            return FC_BAD_ARGUMENT;
    const int64_t state_width = step->rule == FU_ADAM ? 2 : 1;
    int status = 0;
    for (int64_t i = begin; i < end; ++i) {
        if (i + STEP_AHEAD < end) prefetch_predicate(d, order[i + STEP_AHEAD], theta, state, state_width);
        const int32_t p = order[i];
        status |= step_predicate(d, p, at[p], layout->buffers, pieces_of[i], step, theta, state);
        at[p] = -1;
    }
    if (transitions != NULL)
        status |= step_transitions(step, theta + d->ptr[d->num_predicates], squares, moments, transitions,
                                   num_transitions);
    return status;
}

int64_t fb_order_by_piece(fb_layout *layout, int32_t *order_scratch, uint8_t *pieces_scratch)
{
    int32_t *order = layout->order;
    uint8_t *pieces_of = layout->pieces_of;
    /* piece 0's own close up in place (never ahead of where they are read), the
     * others wait in the scratch and follow them */
    int64_t alone = 0, rest = 0;
    for (int64_t i = 0; i < layout->used_predicates; ++i) {
        if (pieces_of[i] == 1) {
            order[alone] = order[i];
            pieces_of[alone++] = pieces_of[i];
        } else {
            order_scratch[rest] = order[i];
            pieces_scratch[rest++] = pieces_of[i];
        }
    }
    for (int64_t i = 0; i < rest; ++i) {
        order[alone + i] = order_scratch[i];
        pieces_of[alone + i] = pieces_scratch[i];
    }
    return alone;
}

/* A chunk starts at a token whose previous label (outside before a sentence) and own
 * label make one, and ends at a token whose own and following labels do. */
#define STARTS(previous, label) starts[(previous) * (outside + 1) + (label)]
#define ENDS(label, following) ends[(label) * (outside + 1) + (following)]

int fb_chunk_f1(const int64_t *gold, int64_t gold_tokens, const int64_t *gold_offsets, int64_t gold_sentences,
                const int64_t *sentences, int64_t num_sentences, const int64_t *predicted, int64_t n,
                int32_t num_draws, int64_t outside, const uint8_t *starts, const uint8_t *ends, const int64_t *kind,
                double *f1)
{
    int64_t tokens = 0;
    for (int64_t i = 0; i < num_sentences; ++i) {
        if (sentences[i] < 0 || sentences[i] >= gold_sentences) return FC_BAD_ARGUMENT;
        const int64_t begin = gold_offsets[sentences[i]], end = gold_offsets[sentences[i] + 1];
        if (begin < 0 || end < begin || end > gold_tokens) return FC_BAD_ARGUMENT;
        for (int64_t t = begin; t < end; ++t)
            if (gold[t] < 0 || gold[t] >= outside) return FC_BAD_ARGUMENT;
        tokens += end - begin;
    }
    if (tokens != n) return FC_BAD_ARGUMENT;
    for (int64_t t = 0; t < num_draws * n; ++t)
        if (predicted[t] < 0 || predicted[t] >= outside) return FC_BAD_ARGUMENT;
    for (int32_t k = 0; k < num_draws; ++k) {
        const int64_t *draw = predicted + k * n;
        for (int64_t i = 0; i < num_sentences; ++i) {
            const int64_t *truth = gold + gold_offsets[sentences[i]];
            const int64_t T = gold_offsets[sentences[i] + 1] - gold_offsets[sentences[i]];
            int64_t gold_end = -1, end = -1, found = 0, total = 0;
            /* from the right, so that each token knows where the chunk it is in ends */
            for (int64_t t = T - 1; t >= 0; --t) {
                const int64_t g = truth[t], p = draw[t];
                if (ENDS(g, t + 1 < T ? truth[t + 1] : outside)) gold_end = t;
                if (ENDS(p, t + 1 < T ? draw[t + 1] : outside)) end = t;
                const int gold_starts = STARTS(t > 0 ? truth[t - 1] : outside, g) != 0;
                const int draw_starts = STARTS(t > 0 ? draw[t - 1] : outside, p) != 0;
                total += gold_starts + draw_starts;
                found += gold_starts && draw_starts && gold_end == end && kind[g] == kind[p];
            }
            f1[k * num_sentences + i] = total > 0 ? 2.0 * (double)found / (double)total : 1.0;
            draw += T;
        }
    }
    return FC_OK;
}
