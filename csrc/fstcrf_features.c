/*
 * fstcrf_features.c -- factored feature scores and expectations (see the header).
 *
 * Every loop runs token by token over the active predicates of the token and,
 * for each, over that predicate's features, the layout of CRFsuite's
 * attribute-to-feature lists: the work is proportional to the number of
 * (active predicate, feature) pairs, whatever the size of the dictionary.
 */
#include <stddef.h>
#include <string.h>

#include "fstcrf_features.h"
#include "fstcrf_hashing.h"
#include "fstcrf_portable.h"

int64_t ff_work_doubles(const ff_dictionary *d)
{
    return (int64_t)d->num_states + d->num_labels;
}

int32_t ff_outputs_ascending(const ff_dictionary *d)
{
    for (int32_t p = 0; p < d->num_predicates; ++p)
        for (int64_t f = d->ptr[p] + 1; f < d->ptr[p + 1]; ++f)
            if (d->output[f] <= d->output[f - 1]) return 0;
    return 1;
}

/* The first feature of predicate p's dense tail, features whose outputs are
 * *first_output, *first_output + 1, ..., S + L - 1 in order, read as contiguous
 * vectors: all of a complete row (every output, from 0: complete feature sets), the
 * last L of a row that ends with every label output S .. S + L - 1 (second order's
 * complete-tags, after the pair states it supports); else ptr[p+1] (no tail).  With
 * ascending outputs below S + L, a row of at least L features whose L-th from last
 * has output S ends with the L label outputs. */
static inline int64_t dense_tail(const ff_dictionary *d, int32_t p, int32_t *first_output)
{
    const int32_t S = d->num_states, L = d->num_labels;
    const int64_t start = d->ptr[p], end = d->ptr[p + 1];
    *first_output = 0;
    if (!d->outputs_ascending)
        return end;
    if (end - start == (int64_t)S + L)
        return start;
    if (L > 0 && end - start >= L && d->output[end - L] == S) {
        *first_output = S;
        return end - L;
    }
    return end;
}

/* FC_OK if the block's rows and predicates (and states, when given) are in range. */
static int check_block(const ff_dictionary *d, const ff_tokens *x, const int32_t *plus,
                       const int32_t *minus)
{
    if (d->num_states <= 0 || d->num_labels < 0 || d->num_predicates < 0 || x->num_tokens < 0)
        return FC_BAD_ARGUMENT;
    if (x->num_tokens == 0)
        return FC_OK;
    if (x->indptr[0] < 0)
        return FC_BAD_ARGUMENT;
    for (int64_t t = 0; t < x->num_tokens; ++t) {
        if (x->indptr[t + 1] < x->indptr[t])
            return FC_BAD_ARGUMENT;
        if ((plus != NULL && (plus[t] < 0 || plus[t] >= d->num_states))
            || (minus != NULL && (minus[t] < 0 || minus[t] >= d->num_states)))
            return FC_BAD_ARGUMENT;
    }
    for (int64_t j = x->indptr[0]; j < x->indptr[x->num_tokens]; ++j)
        if (x->indices[j] < 0 || x->indices[j] >= d->num_predicates)
            return FC_BAD_ARGUMENT;
    return FC_OK;
}

/* Ask for the rows of weights [F] (or gradient) and outputs of the predicates
 * of token t, read a token later: a large model's rows lie scattered far beyond
 * the caches, and one row read after another leaves the memory mostly idle. */
static void prefetch_rows(const ff_dictionary *d, const ff_tokens *x, int64_t t, const double *weights)
{
    if (t >= x->num_tokens)
        return;
    for (int64_t j = x->indptr[t]; j < x->indptr[t + 1]; ++j) {
        const int32_t p = x->indices[j];
        for (int64_t f = d->ptr[p]; f < d->ptr[p + 1]; f += 8)
            FC_PREFETCH(weights + f);
        for (int64_t f = d->ptr[p]; f < d->ptr[p + 1]; f += 16)
            FC_PREFETCH(d->output + f);
    }
}

/* Ask for the feature pointers of the predicates of token t, which prefetch_rows
 * reads a token later to find their rows. */
static void prefetch_pointers(const ff_dictionary *d, const ff_tokens *x, int64_t t)
{
    if (t >= x->num_tokens)
        return;
    for (int64_t j = x->indptr[t]; j < x->indptr[t + 1]; ++j)
        FC_PREFETCH(d->ptr + x->indices[j]);
}

/* Where predicate p's counts go under the layout at (see ff_accumulate_at): the
 * array, and the shift that takes feature f's index to its count's there. */
static inline double *counts_of(const ff_dictionary *d, int32_t p, const int64_t *at, double *grad,
                                double *direct, int64_t *shift)
{
    if (at == NULL || at[p] == FF_DIRECT) {
        *shift = 0;
        return at == NULL ? grad : direct;
    }
    *shift = at[p] - d->ptr[p];
    return grad;
}

/* prefetch_rows for counts laid out by at (see ff_accumulate_at). */
static void prefetch_rows_at(const ff_dictionary *d, const ff_tokens *x, int64_t t, double *counts,
                             const int64_t *at, double *direct)
{
    if (t >= x->num_tokens)
        return;
    for (int64_t j = x->indptr[t]; j < x->indptr[t + 1]; ++j) {
        const int32_t p = x->indices[j];
        int64_t shift;
        const double *row = counts_of(d, p, at, counts, direct, &shift) + d->ptr[p] + shift;
        const int64_t length = d->ptr[p + 1] - d->ptr[p];
        for (int64_t k = 0; k < length; k += 8)
            FC_PREFETCH(row + k);
        for (int64_t f = d->ptr[p]; f < d->ptr[p + 1]; f += 16)
            FC_PREFETCH(d->output + f);
    }
}

int ff_emissions(const ff_dictionary *d, const ff_tokens *x, const double *theta,
                 double scale, double *emit, double *work)
{
    int status = check_block(d, x, NULL, NULL);
    if (status != FC_OK)
        return status;
    const int32_t S = d->num_states;
    const int32_t L = d->num_labels;
    /* work[q] = score of output q at the current token; each output of a row gets
     * one term, so a dense tail adds the same sums as the general loop */
    prefetch_pointers(d, x, 0);
    prefetch_pointers(d, x, 1);
    prefetch_rows(d, x, 0, theta);
    for (int64_t t = 0; t < x->num_tokens; ++t) {
        prefetch_pointers(d, x, t + 2);
        prefetch_rows(d, x, t + 1, theta);
        memset(work, 0, sizeof(double) * (size_t)(S + L));
        for (int64_t j = x->indptr[t]; j < x->indptr[t + 1]; ++j) {
            const int32_t p = x->indices[j];
            const double v = x->values != NULL ? x->values[j] : 1.0;
            int32_t first_output;
            const int64_t tail = dense_tail(d, p, &first_output);
            for (int64_t f = d->ptr[p]; f < tail; ++f)
                work[d->output[f]] += v * theta[f];
            const double *row = theta + tail;
            double *to = work + first_output;
            const int64_t length = d->ptr[p + 1] - tail;
            FC_SIMD
            for (int64_t k = 0; k < length; ++k) to[k] += v * row[k];
        }
        double *row = emit + t * (int64_t)S;
        if (L > 0) {
            for (int32_t s = 0; s < S; ++s)
                row[s] = scale * (work[s] + work[S + d->state_label[s]]);
        } else {
            for (int32_t s = 0; s < S; ++s)
                row[s] = scale * work[s];
        }
    }
    return FC_OK;
}

int ff_accumulate(const ff_dictionary *d, const ff_tokens *x, const double *marg,
                  double scale, double *grad, double *work)
{
    return ff_accumulate_at(d, x, marg, scale, NULL, grad, NULL, work);
}

/* The loop of ff_accumulate_at, inlined twice so that the dense layout (at NULL)
 * keeps the row addressing of a plain dictionary walk. */
static inline void accumulate_rows(const ff_dictionary *d, const ff_tokens *x, const double *marg,
                                   double scale, const int64_t *at, double *grad, double *direct, double *work)
{
    const int32_t S = d->num_states;
    const int32_t L = d->num_labels;
    /* work[q] = weight of output q at the current token (m_t in the header) */
    if (at != NULL)
        prefetch_rows_at(d, x, 0, grad, at, direct);
    else
        prefetch_rows(d, x, 0, grad);
    for (int64_t t = 0; t < x->num_tokens; ++t) {
        if (at != NULL)
            prefetch_rows_at(d, x, t + 1, grad, at, direct);
        else
            prefetch_rows(d, x, t + 1, grad);
        const double *row = marg + t * (int64_t)S;
        memcpy(work, row, sizeof(double) * (size_t)S);
        if (L > 0) {
            memset(work + S, 0, sizeof(double) * (size_t)L);
            for (int32_t s = 0; s < S; ++s)
                work[S + d->state_label[s]] += row[s];
        }
        for (int64_t j = x->indptr[t]; j < x->indptr[t + 1]; ++j) {
            const int32_t p = x->indices[j];
            const double v = x->values != NULL ? scale * x->values[j] : scale;
            int64_t shift;  /* feature f's count: counts[f + shift] */
            double *counts = counts_of(d, p, at, grad, direct, &shift);
            int32_t first_output;
            const int64_t tail = dense_tail(d, p, &first_output);
            for (int64_t f = d->ptr[p]; f < tail; ++f)
                counts[f + shift] += v * work[d->output[f]];
            double *row = counts + (tail + shift);
            const double *from = work + first_output;
            const int64_t length = d->ptr[p + 1] - tail;
            FC_SIMD
            for (int64_t k = 0; k < length; ++k) row[k] += v * from[k];
        }
    }
}

int ff_accumulate_at(const ff_dictionary *d, const ff_tokens *x, const double *marg,
                     double scale, const int64_t *at, double *grad, double *direct, double *work)
{
    int status = check_block(d, x, NULL, NULL);
    if (status != FC_OK)
        return status;
    if (at == NULL) {
        accumulate_rows(d, x, marg, scale, NULL, grad, NULL, work);
        return FC_OK;
    }
    if (x->num_tokens > 0)
        for (int64_t j = x->indptr[0]; j < x->indptr[x->num_tokens]; ++j) {
            const int64_t place = at[x->indices[j]];
            if (place < 0 && !(place == FF_DIRECT && direct != NULL))
                return FC_BAD_ARGUMENT;
        }
    accumulate_rows(d, x, marg, scale, at, grad, direct, work);
    return FC_OK;
}

void ff_add_rows_at(const ff_dictionary *d, const int64_t *at, const double *counts, double *grad)
{
    for (int32_t p = 0; p < d->num_predicates; ++p) {
        if (at[p] < 0)
            continue;
        const double *from = counts + at[p];
        double *to = grad + d->ptr[p];
        const int64_t length = d->ptr[p + 1] - d->ptr[p];
        for (int64_t k = 0; k < length; ++k) to[k] += from[k];
    }
}

/* 1 if output q fires when the state is s, else 0. */
static int fires(const ff_dictionary *d, int32_t q, int32_t s)
{
    return q == s || (d->num_labels > 0 && q == d->num_states + d->state_label[s]);
}

int ff_add_paths(const ff_dictionary *d, const ff_tokens *x, const int32_t *plus,
                 const int32_t *minus, double scale, double *grad)
{
    int status = check_block(d, x, plus, minus);
    if (status != FC_OK)
        return status;
    for (int64_t t = 0; t < x->num_tokens; ++t) {
        const int32_t up = plus[t];
        if (minus != NULL && minus[t] == up)
            continue;
        for (int64_t j = x->indptr[t]; j < x->indptr[t + 1]; ++j) {
            const int32_t p = x->indices[j];
            const double v = x->values != NULL ? scale * x->values[j] : scale;
            for (int64_t f = d->ptr[p]; f < d->ptr[p + 1]; ++f) {
                const int32_t q = d->output[f];
                const int delta = fires(d, q, up) - (minus != NULL ? fires(d, q, minus[t]) : 0);
                if (delta != 0)
                    grad[f] += delta * v;
            }
        }
    }
    return FC_OK;
}

/* Sort a[0 .. n-1] ascending: quicksort on the median of three, insertion sort below
 * 16 entries, recursing into the smaller part only. */
static void sort_columns(int32_t *a, int64_t n)
{
    while (n > 16) {
        int32_t x = a[0], y = a[n / 2], z = a[n - 1];
        int32_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        int64_t i = 0, j = n - 1;
        while (i <= j) {
            while (a[i] < pivot) ++i;
            while (a[j] > pivot) --j;
            if (i <= j) {
                int32_t swap = a[i];
                a[i++] = a[j];
                a[j--] = swap;
            }
        }
        if (j + 1 < n - i) {
            sort_columns(a, j + 1);
            a += i;
            n -= i;
        } else {
            sort_columns(a + i, n - i);
            n = j + 1;
        }
    }
    for (int64_t i = 1; i < n; ++i) {
        int32_t x = a[i];
        int64_t j = i;
        while (j > 0 && a[j - 1] > x) {
            a[j] = a[j - 1];
            --j;
        }
        a[j] = x;
    }
}

/* The keys of the cross product of line k at token t, appended to keys from *n on;
 * FC_BAD_ARGUMENT if there are more than `room` of them. */
static int line_keys(int64_t num_tokens, const int64_t *value_ptr, const uint64_t *value_hashes,
                     uint64_t seed, const int32_t *line_items, int32_t m, int64_t t,
                     uint64_t *keys, int64_t *n, int64_t room)
{
    int64_t lo[FF_MAX_ITEMS], hi[FF_MAX_ITEMS], at[FF_MAX_ITEMS];
    uint64_t partial[FF_MAX_ITEMS + 1];
    for (int32_t d = 0; d < m; ++d) {
        const int64_t *ptr = value_ptr + (int64_t)line_items[d] * (num_tokens + 1);
        lo[d] = at[d] = ptr[t];
        hi[d] = ptr[t + 1];
        if (lo[d] == hi[d])
            return FC_OK;                       /* an empty list: no predicate */
    }
    partial[0] = seed;
    int32_t d = 0;
    for (;;) {
        for (; d < m; ++d)
            partial[d + 1] = fh_mix(partial[d] ^ value_hashes[at[d]]);
        if (*n >= room)
            return FC_BAD_ARGUMENT;
        keys[(*n)++] = partial[m];
        d = m - 1;                              /* the next combination, odometer-wise */
        while (d >= 0 && ++at[d] == hi[d]) {
            at[d] = lo[d];
            --d;
        }
        if (d < 0)
            return FC_OK;
    }
}

/* Merge the ascending runs a[0 .. m-1] and a[m .. m+n-1] into a[0 .. m+n-1]; the
 * first run is copied to spare [m] first (the merge never overtakes the second). */
static void merge_runs(int32_t *a, int64_t m, int64_t n, int64_t *spare)
{
    for (int64_t i = 0; i < m; ++i)
        spare[i] = a[i];
    int64_t i = 0, j = m, out = 0;
    while (i < m && j < m + n)
        a[out++] = spare[i] <= a[j] ? (int32_t)spare[i++] : a[j++];
    while (i < m)
        a[out++] = (int32_t)spare[i++];
}

/* The known columns of the lines k in [first, last) at token t, appended to indices
 * from *nnz on; FC_BAD_ARGUMENT if a token has more keys than scratch_size or the
 * rows more entries than max_entries. */
static int known_columns(int64_t num_tokens, const int64_t *value_ptr, const uint64_t *value_hashes,
                         const uint64_t *seeds, const int32_t *item_ptr, const int32_t *items,
                         int32_t first, int32_t last, int64_t t, int64_t capacity,
                         const uint64_t *slots, int64_t scratch_size, uint64_t *scratch_keys,
                         int64_t *scratch_columns, int32_t *indices, int64_t *nnz, int64_t max_entries)
{
    int64_t n = 0;
    for (int32_t k = first; k < last; ++k) {
        const int32_t m = item_ptr[k + 1] - item_ptr[k];
        int status = line_keys(num_tokens, value_ptr, value_hashes, seeds[k], items + item_ptr[k], m, t,
                               scratch_keys, &n, scratch_size);
        if (status != FC_OK)
            return status;
    }
    /* ask for every key's slot before probing any, so that the cache misses overlap */
    for (int64_t i = 0; i < n; ++i)
        FC_PREFETCH(slots + 2 * (scratch_keys[i] & (uint64_t)(capacity - 1)));
    fh_lookup(scratch_keys, n, capacity, slots, scratch_columns);
    for (int64_t i = 0; i < n; ++i) {
        if (scratch_columns[i] < 0)
            continue;
        if (*nnz >= max_entries)
            return FC_BAD_ARGUMENT;
        indices[(*nnz)++] = (int32_t)scratch_columns[i];
    }
    return FC_OK;
}

/* Whether ff_list_rows' lines, items and value pointers are in range. */
static int lists_in_range(int64_t num_tokens, int32_t num_items, const int64_t *value_ptr, int64_t num_values,
                          int32_t num_templates, const int32_t *item_ptr, const int32_t *items)
{
    if (num_tokens < 0 || num_items < 0 || num_templates < 0 || item_ptr[0] != 0)
        return 0;
    for (int32_t k = 0; k < num_templates; ++k) {
        if (item_ptr[k + 1] < item_ptr[k] || item_ptr[k + 1] - item_ptr[k] > FF_MAX_ITEMS)
            return 0;
        for (int32_t i = item_ptr[k]; i < item_ptr[k + 1]; ++i)
            if (items[i] < 0 || items[i] >= num_items)
                return 0;
    }
    for (int32_t j = 0; j < num_items; ++j) {
        const int64_t *ptr = value_ptr + (int64_t)j * (num_tokens + 1);
        if (ptr[0] < 0 || ptr[num_tokens] > num_values)
            return 0;
        for (int64_t t = 0; t < num_tokens; ++t)
            if (ptr[t + 1] < ptr[t])
                return 0;
    }
    return 1;
}

/* The rest of token t's row, whose first `own` columns (ascending, from `start`) the
   first lines gave: the known columns of lines first .. last-1, sorted, merged in. */
static int rest_of_row(int64_t num_tokens, const int64_t *value_ptr, const uint64_t *value_hashes,
                       const uint64_t *seeds, const int32_t *item_ptr, const int32_t *items, int32_t first,
                       int32_t last, int64_t t, int64_t capacity, const uint64_t *slots, int64_t scratch_size,
                       uint64_t *scratch_keys, int64_t *scratch_columns, int32_t *indices, int64_t *nnz,
                       int64_t max_entries, int64_t start, int64_t own)
{
    int status = known_columns(num_tokens, value_ptr, value_hashes, seeds, item_ptr, items, first, last, t,
                               capacity, slots, scratch_size, scratch_keys, scratch_columns, indices, nnz,
                               max_entries);
    if (status != FC_OK)
        return status;
    if (own == 0) {
        sort_columns(indices + start, *nnz - start);
    } else {                                /* sort the others, then merge the two runs */
        sort_columns(indices + start + own, *nnz - start - own);
        merge_runs(indices + start, own, *nnz - start - own, scratch_columns);
    }
    return FC_OK;
}

int ff_list_rows(int64_t num_tokens, int32_t num_items, const int64_t *value_ptr,
                 int64_t num_values, const uint64_t *value_hashes, int32_t num_templates,
                 const uint64_t *seeds, const int32_t *item_ptr, const int32_t *items,
                 int64_t capacity, const uint64_t *slots, int64_t scratch_size,
                 uint64_t *scratch_keys, int64_t *scratch_columns, int32_t num_grouped,
                 int64_t num_groups, const int64_t *group, const int64_t *memo_ptr, int32_t *memo,
                 int64_t *memo_count, int64_t *indptr, int64_t max_entries, int32_t *indices)
{
    if (!lists_in_range(num_tokens, num_items, value_ptr, num_values, num_templates, item_ptr, items) ||
        num_grouped < 0 || num_grouped > num_templates || num_groups < 0)
        return FC_BAD_ARGUMENT;
    if (num_grouped > 0) {
        if (memo_ptr[0] != 0)
            return FC_BAD_ARGUMENT;
        for (int64_t g = 0; g < num_groups; ++g) {
            if (memo_ptr[g + 1] < memo_ptr[g])
                return FC_BAD_ARGUMENT;
            memo_count[g] = -1;
        }
        for (int64_t t = 0; t < num_tokens; ++t)
            if (group[t] < 0 || group[t] >= num_groups)
                return FC_BAD_ARGUMENT;
    }
    int64_t nnz = 0;
    indptr[0] = 0;
    for (int64_t t = 0; t < num_tokens; ++t) {
        int64_t start = nnz;
        int status;
        if (num_grouped > 0) {
            const int64_t g = group[t];
            if (memo_count[g] < 0) {            /* the group's first token: its lines looked up */
                int64_t kept = 0;
                status = known_columns(num_tokens, value_ptr, value_hashes, seeds, item_ptr, items, 0,
                                       num_grouped, t, capacity, slots, scratch_size, scratch_keys,
                                       scratch_columns, memo + memo_ptr[g], &kept,
                                       memo_ptr[g + 1] - memo_ptr[g]);
                if (status != FC_OK)
                    return status;
                sort_columns(memo + memo_ptr[g], kept);
                memo_count[g] = kept;
            }
            if (nnz + memo_count[g] > max_entries)
                return FC_BAD_ARGUMENT;
            memcpy(indices + nnz, memo + memo_ptr[g], (size_t)memo_count[g] * sizeof(int32_t));
            nnz += memo_count[g];
        }
        status = rest_of_row(num_tokens, value_ptr, value_hashes, seeds, item_ptr, items, num_grouped,
                             num_templates, t, capacity, slots, scratch_size, scratch_keys, scratch_columns,
                             indices, &nnz, max_entries, start, nnz - start);
        if (status != FC_OK)
            return status;
        indptr[t + 1] = nnz;
    }
    return FC_OK;
}

int ff_list_rows_kept(int64_t num_tokens, int32_t num_items, const int64_t *value_ptr, int64_t num_values,
                      const uint64_t *value_hashes, int32_t num_templates, const uint64_t *seeds,
                      const int32_t *item_ptr, const int32_t *items, int64_t capacity, const uint64_t *slots,
                      int64_t scratch_size, uint64_t *scratch_keys, int64_t *scratch_columns,
                      int32_t num_grouped, const int64_t *group, ff_kept_columns *kept, int64_t *indptr,
                      int64_t max_entries, int32_t *indices)
{
    if (!lists_in_range(num_tokens, num_items, value_ptr, num_values, num_templates, item_ptr, items) ||
        num_grouped < 1 || num_grouped > num_templates || kept->used < 0 || kept->used > kept->pool_size)
        return FC_BAD_ARGUMENT;
    for (int64_t t = 0; t < num_tokens; ++t) {
        const int64_t g = group[t];
        if (g < 0 || g >= kept->num_groups ||
            (kept->start[g] >= 0 && (kept->count[g] < 0 || kept->start[g] + kept->count[g] > kept->used)))
            return FC_BAD_ARGUMENT;
    }
    int64_t nnz = 0;
    indptr[0] = 0;
    for (int64_t t = 0; t < num_tokens; ++t) {
        const int64_t start = nnz, g = group[t];
        if (kept->start[g] >= 0) {          /* kept from an earlier token or call */
            if (nnz + kept->count[g] > max_entries)
                return FC_BAD_ARGUMENT;
            memcpy(indices + nnz, kept->pool + kept->start[g], (size_t)kept->count[g] * sizeof(int32_t));
            nnz += kept->count[g];
        } else {                            /* looked up, and kept while the pool has room */
            int status = known_columns(num_tokens, value_ptr, value_hashes, seeds, item_ptr, items, 0,
                                       num_grouped, t, capacity, slots, scratch_size, scratch_keys,
                                       scratch_columns, indices, &nnz, max_entries);
            if (status != FC_OK)
                return status;
            const int64_t own = nnz - start;
            sort_columns(indices + start, own);
            if (own <= INT32_MAX && kept->used + own <= kept->pool_size) {
                memcpy(kept->pool + kept->used, indices + start, (size_t)own * sizeof(int32_t));
                kept->start[g] = kept->used;
                kept->count[g] = (int32_t)own;
                kept->used += own;
            }
        }
        int status = rest_of_row(num_tokens, value_ptr, value_hashes, seeds, item_ptr, items, num_grouped,
                                 num_templates, t, capacity, slots, scratch_size, scratch_keys, scratch_columns,
                                 indices, &nnz, max_entries, start, nnz - start);
        if (status != FC_OK)
            return status;
        indptr[t + 1] = nnz;
    }
    return FC_OK;
}

int ff_canonical_rows(int64_t num_rows, const int64_t *starts, const int64_t *columns,
                      const double *values, int64_t width, int64_t *indptr, int32_t *indices,
                      double *data, int32_t *ones)
{
    if (num_rows < 0 || starts[0] != 0)
        return FC_BAD_ARGUMENT;
    for (int64_t t = 0; t < num_rows; ++t)
        if (starts[t + 1] < starts[t])
            return FC_BAD_ARGUMENT;
    for (int64_t j = 0; j < starts[num_rows]; ++j)
        if (columns[j] < 0 || columns[j] >= width || columns[j] > INT32_MAX)
            return FC_BAD_ARGUMENT;
    int64_t out = 0;
    indptr[0] = 0;
    *ones = 1;
    for (int64_t t = 0; t < num_rows; ++t) {
        const int64_t first = out;
        for (int64_t j = starts[t]; j < starts[t + 1]; ++j) {
            /* insertion into the sorted run first .. out-1: after the entries of a
               smaller or equal column, so that a repeated column's values add in order */
            const int32_t column = (int32_t)columns[j];
            int64_t at = out;
            while (at > first && indices[at - 1] > column)
                --at;
            if (at > first && indices[at - 1] == column) {
                data[at - 1] += values[j];
                continue;
            }
            for (int64_t k = out; k > at; --k) {
                indices[k] = indices[k - 1];
                data[k] = data[k - 1];
            }
            indices[at] = column;
            data[at] = values[j];
            ++out;
        }
        int64_t kept = first;  /* zeros dropped, as a sum may give one */
        for (int64_t k = first; k < out; ++k)
            if (data[k] != 0.0) {
                *ones &= data[k] == 1.0;
                indices[kept] = indices[k];
                data[kept++] = data[k];
            }
        out = kept;
        indptr[t + 1] = out;
    }
    return FC_OK;
}

int ff_line_sizes(int64_t num_tokens, int32_t num_items, const int64_t *value_ptr, int32_t first,
                  int32_t last, const int32_t *item_ptr, const int32_t *items, int64_t num_at,
                  const int64_t *at, int64_t *sizes)
{
    if (num_tokens < 0 || num_items < 0 || first < 0 || last < first || num_at < 0 ||
        (at == NULL && num_at != num_tokens))
        return FC_BAD_ARGUMENT;
    for (int32_t k = first; k < last; ++k) {
        if (item_ptr[k + 1] < item_ptr[k])
            return FC_BAD_ARGUMENT;
        for (int32_t i = item_ptr[k]; i < item_ptr[k + 1]; ++i)
            if (items[i] < 0 || items[i] >= num_items)
                return FC_BAD_ARGUMENT;
    }
    for (int32_t j = 0; j < num_items; ++j) {
        const int64_t *ptr = value_ptr + (int64_t)j * (num_tokens + 1);
        for (int64_t t = 0; t < num_tokens; ++t)
            if (ptr[t + 1] < ptr[t])
                return FC_BAD_ARGUMENT;
    }
    for (int64_t m = 0; m < num_at; ++m)
        if (at != NULL && (at[m] < 0 || at[m] >= num_tokens))
            return FC_BAD_ARGUMENT;
    for (int64_t m = 0; m < num_at; ++m) {
        const int64_t t = at == NULL ? m : at[m];
        int64_t total = 0;
        for (int32_t k = first; k < last; ++k) {
            int64_t keys = 1;
            for (int32_t i = item_ptr[k]; i < item_ptr[k + 1]; ++i) {
                const int64_t *ptr = value_ptr + (int64_t)items[i] * (num_tokens + 1);
                const int64_t count = ptr[t + 1] - ptr[t];
                keys = count != 0 && keys > FF_MANY_KEYS / count ? FF_MANY_KEYS : keys * count;
            }
            total = total + keys > FF_MANY_KEYS ? FF_MANY_KEYS : total + keys;
        }
        sizes[m] = total;
    }
    return FC_OK;
}
