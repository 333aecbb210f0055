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

/* 1 if predicate p has a feature for every output, in output order (complete
 * feature sets): its features f = ptr[p] + q, q < S + L, have output q. */
static inline int complete_row(const ff_dictionary *d, int32_t p, int32_t outputs)
{
    return d->outputs_ascending && d->ptr[p + 1] - d->ptr[p] == outputs;
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

int ff_emissions(const ff_dictionary *d, const ff_tokens *x, const double *theta,
                 double scale, double *emit, double *work)
{
    int status = check_block(d, x, NULL, NULL);
    if (status != FC_OK)
        return status;
    const int32_t S = d->num_states;
    const int32_t L = d->num_labels;
    /* work[q] = score of output q at the current token; a complete row adds to
     * work in the same order as the general loop, so the sums are the same */
    prefetch_rows(d, x, 0, theta);
    for (int64_t t = 0; t < x->num_tokens; ++t) {
        prefetch_rows(d, x, t + 1, theta);
        memset(work, 0, sizeof(double) * (size_t)(S + L));
        for (int64_t j = x->indptr[t]; j < x->indptr[t + 1]; ++j) {
            const int32_t p = x->indices[j];
            const double v = x->values != NULL ? x->values[j] : 1.0;
            if (complete_row(d, p, S + L)) {
                const double *row = theta + d->ptr[p];
#pragma omp simd
                for (int32_t q = 0; q < S + L; ++q) work[q] += v * row[q];
                continue;
            }
            for (int64_t f = d->ptr[p]; f < d->ptr[p + 1]; ++f)
                work[d->output[f]] += v * theta[f];
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
    int status = check_block(d, x, NULL, NULL);
    if (status != FC_OK)
        return status;
    const int32_t S = d->num_states;
    const int32_t L = d->num_labels;
    /* work[q] = weight of output q at the current token (m_t in the header) */
    prefetch_rows(d, x, 0, grad);
    for (int64_t t = 0; t < x->num_tokens; ++t) {
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
            if (complete_row(d, p, S + L)) {
                double *row = grad + d->ptr[p];
#pragma omp simd
                for (int32_t q = 0; q < S + L; ++q) row[q] += v * work[q];
                continue;
            }
            for (int64_t f = d->ptr[p]; f < d->ptr[p + 1]; ++f)
                grad[f] += v * work[d->output[f]];
        }
    }
    return FC_OK;
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
