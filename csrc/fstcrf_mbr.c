/*
 * fstcrf_mbr.c -- F1-optimal chunks among candidates (see fstcrf_mbr.h): the check
 * that a sentence's candidates above the threshold can all be chunks of one output,
 * the interval-scheduling program where they cannot, and Dinkelbach's search.
 */
#include <math.h>
#include <string.h>

#include "fstcrf_kernel.h"
#include "fstcrf_mbr.h"

static int64_t longest(const fc_mbr_candidates *c)
{
    int64_t T = 0;
    for (int32_t b = 0; b < c->num_sentences; ++b)
        if (c->lengths[b] > T)
            T = c->lengths[b];
    return T;
}

int64_t fc_mbr_work_doubles(const fc_mbr_candidates *c)
{
    if (c->num_sentences < 0 || c->num_types < 0)
        return 0;
    return (longest(c) + 1) * ((int64_t)c->num_types + 1);
}

int64_t fc_mbr_work_links(const fc_mbr_candidates *c)
{
    if (c->num_sentences < 0 || c->num_types < 0)
        return 0;
    return 3 * fc_mbr_work_doubles(c) + longest(c) + 1;
}

static int check_candidates(const fc_mbr_candidates *c)
{
    const int32_t B = c->num_sentences, K = c->num_types;
    if (B < 0 || K < 0 || c->starts[0] != 0)
        return FC_BAD_ARGUMENT;
    for (int32_t b = 0; b < B; ++b) {
        if (c->lengths[b] < 0 || c->starts[b + 1] < c->starts[b])
            return FC_BAD_ARGUMENT;
        for (int64_t m = c->starts[b]; m < c->starts[b + 1]; ++m) {
            if (c->first[m] < 0 || c->last[m] < c->first[m] || c->last[m] >= c->lengths[b]
                || c->type[m] < 0 || c->type[m] >= K)
                return FC_BAD_ARGUMENT;
            if (m > c->starts[b] && (c->first[m] < c->first[m - 1]
                                     || (c->first[m] == c->first[m - 1] && c->last[m] < c->last[m - 1])))
                return FC_BAD_ARGUMENT;
        }
    }
    return FC_OK;
}

/* Whether two of sentence b's candidates above threshold, next to each other in
 * candidate order, overlap or touch where their type forbids it. */
static int clashes(const fc_mbr_candidates *c, int32_t b, double threshold)
{
    int64_t previous = -1;
    for (int64_t m = c->starts[b]; m < c->starts[b + 1]; ++m) {
        if (!(c->probability[m] > threshold))
            continue;
        if (previous >= 0) {
            const int touching = c->first[m] == c->last[previous] + 1 && c->type[m] == c->type[previous]
                                 && !c->adjacent[c->type[previous]];
            if (c->first[m] <= c->last[previous] || touching)
                return 1;
        }
        previous = m;
    }
    return 0;
}

/* The first column of a row of W values with the largest value, skipping `skip`
 * (-1: none skipped). */
static int32_t best_column(const double *row, int32_t W, int32_t skip)
{
    int32_t best = skip == 0 ? 1 : 0;
    for (int32_t x = best + 1; x < W; ++x)
        if (x != skip && row[x] > row[best])
            best = x;
    return best;
}

/* Sentence b's best set at threshold by weighted interval scheduling, marked in
 * chosen: over the positions where a candidate above the threshold begins or ends
 * (and 0 and the length), value[p][x] is the best sum over the tokens before p
 * with a chunk of type x ending right before p (x = K: none does). */
static void schedule(const fc_mbr_candidates *c, int32_t b, double threshold, uint8_t *chosen, double *value,
                     int64_t *links)
{
    const int64_t T = c->lengths[b], first_m = c->starts[b], end_m = c->starts[b + 1];
    const int32_t K = c->num_types, W = K + 1, none = K;
    const int64_t cells = (T + 1) * W;
    int64_t *from_position = links, *from_column = links + cells, *from_span = links + 2 * cells;
    int64_t *marked = links + 3 * cells;
    memset(marked, 0, sizeof(int64_t) * (size_t)(T + 1));
    marked[0] = marked[T] = 1;
    for (int64_t m = first_m; m < end_m; ++m)
        if (c->probability[m] > threshold)
            marked[c->first[m]] = marked[c->last[m] + 1] = 1;
    for (int64_t q = 0; q < cells; ++q)
        value[q] = -INFINITY;
    value[none] = 0.0;
    int64_t previous = -1, next_m = first_m;
    for (int64_t p = 0; p <= T; ++p) {
        if (!marked[p])
            continue;
        double *here = value + p * W;
        if (previous >= 0) { /* the tokens from previous to p are O */
            const double *before = value + previous * W;
            const int32_t x = best_column(before, W, -1);
            if (before[x] > here[none]) {
                here[none] = before[x];
                from_position[p * W + none] = previous;
                from_column[p * W + none] = x;
                from_span[p * W + none] = -1;
            }
        }
        for (; next_m < end_m && c->first[next_m] <= p; ++next_m) {
            if (!(c->probability[next_m] > threshold))
                continue;
            const int32_t x = c->type[next_m];
            const int64_t end = c->last[next_m] + 1;
            const int32_t column = best_column(here, W, c->adjacent[x] ? -1 : x);
            const double gain = here[column] + c->probability[next_m] - threshold;
            if (gain > value[end * W + x]) {
                value[end * W + x] = gain;
                from_position[end * W + x] = p;
                from_column[end * W + x] = column;
                from_span[end * W + x] = next_m;
            }
        }
        previous = p;
    }
    int64_t p = T;
    int64_t x = best_column(value + T * W, W, -1);
    while (p > 0) {
        const int64_t cell = p * W + x;
        if (from_span[cell] >= 0)
            chosen[from_span[cell]] = 1;
        p = from_position[cell];
        x = from_column[cell];
    }
}

static void best_at(const fc_mbr_candidates *c, double threshold, uint8_t *chosen, double *work, int64_t *links)
{
    for (int32_t b = 0; b < c->num_sentences; ++b) {
        for (int64_t m = c->starts[b]; m < c->starts[b + 1]; ++m)
            chosen[m] = c->probability[m] > threshold;
        if (clashes(c, b, threshold)) {
            memset(chosen + c->starts[b], 0, (size_t)(c->starts[b + 1] - c->starts[b]));
            schedule(c, b, threshold, chosen, work, links);
        }
    }
}

int fc_mbr_best(const fc_mbr_candidates *c, double threshold, uint8_t *chosen, double *work, int64_t *links)
{
    const int status = check_candidates(c);
    if (status != FC_OK)
        return status;
    best_at(c, threshold, chosen, work, links);
    return FC_OK;
}

/* 2 sum p / (count + expected_chunks) over the chosen candidates, summed in order (0
 * when the denominator is). */
static double f1_ratio(const fc_mbr_candidates *c, const uint8_t *chosen, double expected_chunks)
{
    double mass = 0.0;
    int64_t count = 0;
    for (int64_t m = 0; m < c->starts[c->num_sentences]; ++m)
        if (chosen[m]) {
            mass += c->probability[m];
            ++count;
        }
    const double total = (double)count + expected_chunks;
    return total != 0.0 ? 2.0 * mass / total : 0.0;
}

int fc_mbr_search(const fc_mbr_candidates *c, double expected_chunks, double floor, int32_t max_rounds,
                  uint8_t *chosen, double *threshold, uint8_t *proposal, double *work, int64_t *links)
{
    const int status = check_candidates(c);
    if (status != FC_OK)
        return status;
    const int64_t M = c->starts[c->num_sentences];
    for (int64_t m = 0; m < M; ++m)
        chosen[m] = c->probability[m] > 0.5;
    double best = f1_ratio(c, chosen, expected_chunks);
    double t = floor > best / 2 ? floor : best / 2;
    for (int32_t round = 0; round < max_rounds; ++round) {
        best_at(c, t, proposal, work, links);
        const double score = f1_ratio(c, proposal, expected_chunks);
        if (score <= best + 1e-12)
            break;
        memcpy(chosen, proposal, (size_t)M);
        best = score;
        t = floor > best / 2 ? floor : best / 2;
    }
    *threshold = t;
    return FC_OK;
}
