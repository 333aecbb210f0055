/*
 * fstcrf_blocks.c -- the scaled passes and expected edge counts of a graph
 * made of complete bipartite blocks, tiled so that partial sums stay in
 * registers; see fstcrf_internal.h for the contract.
 *
 * A block is a run of consecutive sources first .. first + n - 1 that all
 * leave to the same targets in the same order, each of those targets being
 * entered from exactly these sources, in order (a second-order chain: the
 * states (a, b) for every a enter the states (b, c) for every c).  Its
 * transition weights are then a matrix M [n, m] in the leaving-slot order of
 * exp_trans_out, row k holding source first + k.  Every sum below adds the same
 * products in the same order as the pass it replaces (row_dot's and
 * gather_dot's four partial sums; scaled_edge_counts' additions token by
 * token), so results are bit for bit those of the untiled passes.
 */
#include "fstcrf_internal.h"

void fc__plan_blocks(const fc_graph *g, buffers *w)
{
    const int32_t S = g->num_states;
    int32_t placed = 0; /* targets of the blocks so far: each state is the target of one block at most */
    w->blocks_ok = 0;
    for (int32_t first = 0; first < S;) {
        const int32_t lo = g->out_ptr[first], m = g->out_ptr[first + 1] - lo;
        int32_t n = 1;
        if (m > 0) {
            n = g->in_ptr[g->out_dst[lo] + 1] - g->in_ptr[g->out_dst[lo]];
            /* a row of S slots is summed by row_dot's vector reduction, in another order */
            if (m == S || n == S || n > S - first) return;
            for (int32_t r = 0; r < m; ++r) {
                const int32_t j = g->out_dst[lo + r], in = g->in_ptr[j];
                if (g->in_ptr[j + 1] - in != n) return;
                for (int32_t k = 0; k < n; ++k)
                    if (g->in_src[in + k] != first + k) return;
            }
            for (int32_t k = 1; k < n; ++k) {
                const int32_t other = g->out_ptr[first + k];
                if (g->out_ptr[first + k + 1] - other != m) return;
                for (int32_t r = 0; r < m; ++r)
                    if (g->out_dst[other + r] != g->out_dst[lo + r]) return;
            }
        }
        w->block[first] = n;
        for (int32_t k = 1; k < n; ++k) w->block[first + k] = 0;
        for (int32_t r = 0; r < m; ++r) w->entering[placed++] = g->in_ptr[g->out_dst[lo + r]];
        first += n;
    }
    w->blocks_ok = 1;
}

/* out [2 * pairs] (pairs <= 3): columns c0 .. c0 + 2 * pairs - 1 of p [n] times
 * the matrix whose row k starts at weight + at[k], that is for each column c
 * the sum over k < n of p[k] * weight[at[k] + c], position k joining partial
 * sum k % 4 (the last n % 4 positions sum 0), added as (s0 + s1) + (s2 + s3). */
static inline void column_sums(const double *p, const double *weight, const int32_t *at, int32_t n,
                               int32_t c0, int pairs, double *out)
{
    fc_pair s[4][3];
    for (int l = 0; l < 4; ++l) s[l][0] = s[l][1] = s[l][2] = fc_pair_zero();
    const int32_t full = n - n % 4;
    int32_t k = 0;
    for (; k < full; k += 4)
        for (int l = 0; l < 4; ++l) {
            const fc_pair factor = fc_pair_set(p[k + l]);
            const double *row = weight + at[k + l] + c0;
            for (int h = 0; h < pairs; ++h)
                s[l][h] = fc_pair_add(s[l][h], fc_pair_mul(factor, fc_pair_load(row + 2 * h)));
        }
    for (; k < n; ++k) {
        const fc_pair factor = fc_pair_set(p[k]);
        const double *row = weight + at[k] + c0;
        for (int h = 0; h < pairs; ++h)
            s[0][h] = fc_pair_add(s[0][h], fc_pair_mul(factor, fc_pair_load(row + 2 * h)));
    }
    for (int h = 0; h < pairs; ++h)
        fc_pair_store(out + 2 * h, fc_pair_add(fc_pair_add(s[0][h], s[1][h]), fc_pair_add(s[2][h], s[3][h])));
}

/* out [columns]: every column of column_sums' product, up to three pairs at a time. */
static void column_products(const double *p, const double *weight, const int32_t *at, int32_t n,
                            int32_t columns, double *out)
{
    int32_t c = 0;
    for (; c + 6 <= columns; c += 6) column_sums(p, weight, at, n, c, 3, out + c);
    for (; c + 4 <= columns; c += 4) column_sums(p, weight, at, n, c, 2, out + c);
    for (; c + 2 <= columns; c += 2) column_sums(p, weight, at, n, c, 1, out + c);
    if (c < columns) {
        double s[4] = {0.0, 0.0, 0.0, 0.0};
        const int32_t full = n - n % 4;
        int32_t k = 0;
        for (; k < full; ++k) s[k % 4] += p[k] * weight[at[k] + c];
        for (; k < n; ++k) s[0] += p[k] * weight[at[k] + c];
        out[c] = (s[0] + s[1]) + (s[2] + s[3]);
    }
}

void fc__forward_blocks(const fc_graph *g, const buffers *w, const double *prev, const double *m_out,
                        const double *e, double *sums, double *row)
{
    const int32_t S = g->num_states;
    for (int32_t j = 0; j < S; ++j) row[j] = 0.0;
    for (int32_t first = 0; first < S; first += w->block[first]) {
        const int32_t n = w->block[first], lo = g->out_ptr[first], m = g->out_ptr[first + 1] - lo;
        const int32_t *target = g->out_dst + lo;
        /* row k of the block's matrix: source first + k's leaving slots */
        column_products(prev + first, m_out, g->out_ptr + first, n, m, sums);
        for (int32_t r = 0; r < m; ++r) row[target[r]] = sums[r] * e[target[r]];
    }
}

void fc__backward_blocks(const fc_graph *g, const buffers *w, const double *v, const double *m_in,
                         double *gathered, double *row)
{
    const int32_t S = g->num_states;
    const int32_t *entering = w->entering;
    for (int32_t first = 0; first < S; first += w->block[first]) {
        const int32_t n = w->block[first], lo = g->out_ptr[first], m = g->out_ptr[first + 1] - lo;
        for (int32_t r = 0; r < m; ++r) gathered[r] = v[g->out_dst[lo + r]];
        /* row r of the block's transposed matrix: target r's entering edges, sources first, first + 1, ... */
        column_products(gathered, m_in, entering, m, n, row + first);
        entering += m;
    }
}

/* The counts of the edges from sources first + k0 .. first + k0 + 2 * pairs - 1
 * (pairs <= 4) into `targets` (1 or 2) targets entered at in_at [targets] (their
 * first entering edge), over tokens 1 .. T - 1, kept in registers meanwhile. */
static inline void count_tile(const buffers *w, int32_t S, int64_t T, int32_t first, int32_t k0, int pairs,
                              const int32_t *target, const int32_t *in_at, int targets, double *edge_counts)
{
    fc_pair c[2][4];
    for (int h = 0; h < targets; ++h)
        for (int x = 0; x < pairs; ++x) c[h][x] = fc_pair_load(edge_counts + in_at[h] + k0 + 2 * x);
    for (int64_t t = 1; t < T; ++t) {
        const double *p = w->alpha + (t - 1) * S + first + k0;
        fc_pair source[4];
        for (int x = 0; x < pairs; ++x) source[x] = fc_pair_load(p + 2 * x);
        for (int h = 0; h < targets; ++h) {
            const fc_pair q = fc_pair_set(w->exp_emit[t * S + target[h]]);
            const double *m = w->exp_trans + in_at[h] + k0;
            for (int x = 0; x < pairs; ++x)
                c[h][x] = fc_pair_add(c[h][x], fc_pair_mul(fc_pair_mul(source[x], fc_pair_load(m + 2 * x)), q));
        }
    }
    for (int h = 0; h < targets; ++h)
        for (int x = 0; x < pairs; ++x) fc_pair_store(edge_counts + in_at[h] + k0 + 2 * x, c[h][x]);
}

/* count_tile of every source of a block into `targets` targets. */
static inline void count_targets(const buffers *w, int32_t S, int64_t T, int32_t first, int32_t n,
                                 const int32_t *target, const int32_t *in_at, int targets, double *edge_counts)
{
    int32_t k = 0;
    for (; k + 8 <= n; k += 8) count_tile(w, S, T, first, k, 4, target, in_at, targets, edge_counts);
    for (; k + 2 <= n; k += 2) count_tile(w, S, T, first, k, 1, target, in_at, targets, edge_counts);
    for (; k < n; ++k)
        for (int h = 0; h < targets; ++h) {
            double *count = edge_counts + in_at[h] + k;
            for (int64_t t = 1; t < T; ++t)
                *count += w->alpha[(t - 1) * S + first + k] * w->exp_trans[in_at[h] + k]
                          * w->exp_emit[t * S + target[h]];
        }
}

void fc__edge_count_blocks(const fc_graph *g, const buffers *w, int64_t T, double *edge_counts)
{
    const int32_t S = g->num_states;
    const int32_t *entering = w->entering;
    for (int32_t first = 0; first < S; first += w->block[first]) {
        const int32_t n = w->block[first], lo = g->out_ptr[first], m = g->out_ptr[first + 1] - lo;
        const int32_t *target = g->out_dst + lo;
        for (int32_t r = 0; r < m; r += 2) {
            if (r + 1 < m)  /* a constant number of targets, so that the tile is kept in registers */
                count_targets(w, S, T, first, n, target + r, entering + r, 2, edge_counts);
            else
                count_targets(w, S, T, first, n, target + r, entering + r, 1, edge_counts);
        }
        entering += m;
    }
}
