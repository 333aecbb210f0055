/*
 * fstcrf_tagging.c -- a batch tagged in one call (see the header).
 */
#include <stddef.h>

#include "fstcrf_hashing.h"
#include "fstcrf_tagging.h"
#include "fstcrf_train.h"
#include "fstcrf_values.h"

int ft_tag(const ft_tagger *t, const fc_scores *scores, ft_tag_buffers *b, int64_t num_tokens,
           int32_t num_sequences, const int64_t *offsets, const uint64_t *sources, const ff_tokens *rows,
           const int32_t *token_class, int32_t *path, double *score)
{
    const int64_t whole[2] = {0, num_tokens};
    if (offsets == NULL) {            /* one sentence of all the tokens */
        if (num_sequences != 1)
            return FC_BAD_ARGUMENT;
        offsets = whole;
    }
    if (num_tokens < 0 || num_tokens > b->max_tokens || num_sequences < 0 || offsets[0] != 0 ||
        offsets[num_sequences] != num_tokens || (sources == NULL) == (rows == NULL))
        return FC_BAD_ARGUMENT;
    ff_tokens looked_up;
    if (sources != NULL) {
        int status = fh_window_hashes(num_tokens, num_sequences, offsets, t->num_sources, sources,
                                      t->num_observations, t->source, t->offset, t->salt, b->window);
        if (status != FC_OK)
            return status;
        status = fh_predicate_rows(num_tokens, t->num_observations, b->window, t->num_lines, t->seeds,
                                   t->item_ptr, t->items, t->capacity, t->slots, b->line_scratch,
                                   b->indptr, b->indices);
        if (status != FC_OK)
            return status;
        looked_up = (ff_tokens){num_tokens, b->indptr, b->indices, NULL};
        rows = &looked_up;
    } else if (rows->num_tokens != num_tokens) {
        return FC_BAD_ARGUMENT;
    }
    if (t->state_map == NULL)  /* the model's own graph */
        return ft_best_paths(t->dictionary, rows, t->theta, t->graph, scores, num_sequences, offsets,
                             token_class, b->emit, b->work, b->workspace, path, score);
    /* a restriction: the model's emissions gathered onto the states searched */
    int status = ff_emissions(t->dictionary, rows, t->theta, 1.0, b->emit, b->work);
    if (status != FC_OK)
        return status;
    const int32_t S = t->dictionary->num_states, searched = t->graph->num_states;
    for (int32_t s = 0; s < searched; ++s)
        if (t->state_map[s] < 0 || t->state_map[s] >= S)
            return FC_BAD_ARGUMENT;
    for (int64_t n = 0; n < num_tokens; ++n) {
        const double *from = b->emit + n * S;
        double *to = b->search_emit + n * searched;
        for (int32_t s = 0; s < searched; ++s)
            to[s] = from[t->state_map[s]];
    }
    const fc_batch batch = {num_sequences, offsets, b->search_emit, token_class};
    status = fc_viterbi(t->graph, scores, &batch, path, score, b->workspace);
    if (status == FC_OK)
        for (int64_t n = 0; n < num_tokens; ++n)
            path[n] = t->state_map[path[n]];
    return status;
}

int ft_tag_entries(const ft_tagger *t, const fc_scores *scores, ft_tag_buffers *b, int64_t num_tokens,
                   int32_t num_sequences, const int64_t *offsets, const int64_t *starts, const int64_t *columns,
                   const double *values, const int32_t *token_class, int32_t *path, double *score)
{
    if (num_tokens < 0 || num_tokens > b->max_tokens || starts[num_tokens] > b->max_entries)
        return FC_BAD_ARGUMENT;
    int32_t ones;
    int status = ff_canonical_rows(num_tokens, starts, columns, values, t->dictionary->num_predicates, b->indptr,
                                   b->indices, b->values, &ones);
    if (status != FC_OK)
        return status;
    const ff_tokens rows = {num_tokens, b->indptr, b->indices, ones ? NULL : b->values};
    return ft_tag(t, scores, b, num_tokens, num_sequences, offsets, NULL, &rows, token_class, path, score);
}

int ft_tag_lists(const ft_tagger *t, const fc_scores *scores, ft_tag_buffers *b, ft_list_buffers *lb,
                 const ft_value_store *store, int32_t num_items, const int64_t *items, int64_t num_tokens,
                 int32_t num_sequences, const int64_t *offsets, int32_t num_columns, const int64_t *token_rows,
                 int32_t num_grouped, int32_t group_column, const int32_t *token_class, int32_t *path,
                 double *score, int64_t *needed)
{
    const int64_t whole[2] = {0, num_tokens};
    if (offsets == NULL) {
        if (num_sequences != 1)
            return FC_BAD_ARGUMENT;
        offsets = whole;
    }
    needed[0] = needed[1] = needed[2] = 0;
    if (num_tokens < 1 || num_tokens > lb->max_tokens || num_tokens > b->max_tokens || num_items < 1 ||
        num_items > lb->max_items || t->num_lines < 1 || num_grouped < 0 || num_grouped > t->num_lines ||
        (num_grouped > 0 && (group_column < 0 || group_column >= num_columns)))
        return FC_BAD_ARGUMENT;
    int status = fv_item_values(num_tokens, num_sequences, offsets, num_columns, token_rows, store->num_rows,
                                store->stride, store->num_singles, store->single, store->num_lists,
                                store->list_span, store->num_list_hashes, store->list_hashes, store->num_texts,
                                store->text_span, store->num_text_bytes, store->text_bytes, num_items, items,
                                NULL, t->salt, lb->value_ptr, lb->max_hashes, lb->hashes, needed);
    if (status != FC_OK)
        return status;          /* FV_SHORT: needed[0] says how many hashes */
    status = ff_line_sizes(num_tokens, num_items, lb->value_ptr, 0, t->num_lines, t->item_ptr, t->items,
                           num_tokens, NULL, lb->sizes);
    if (status != FC_OK)
        return status;
    int64_t most = 0, total = 0;
    for (int64_t n = 0; n < num_tokens; ++n) {
        if (lb->sizes[n] >= FF_MANY_KEYS)
            return FC_BAD_ARGUMENT;
        most = lb->sizes[n] > most ? lb->sizes[n] : most;
        total += lb->sizes[n];
    }
    needed[1] = most;
    needed[2] = total;
    if (most > lb->max_keys || total > lb->max_entries)
        return FV_SHORT;
    const int64_t num_values = lb->value_ptr[(int64_t)num_items * (num_tokens + 1) - 1];
    if (num_grouped > 0 && lb->kept.num_groups > 0)
        status = ff_list_rows_kept(num_tokens, num_items, lb->value_ptr, num_values, lb->hashes, t->num_lines,
                                   t->seeds, t->item_ptr, t->items, t->capacity, t->slots, lb->max_keys,
                                   lb->scratch_keys, lb->scratch_columns, num_grouped,
                                   token_rows + (int64_t)group_column * num_tokens, &lb->kept, b->indptr,
                                   lb->max_entries, lb->indices);
    else
        status = ff_list_rows(num_tokens, num_items, lb->value_ptr, num_values, lb->hashes, t->num_lines,
                              t->seeds, t->item_ptr, t->items, t->capacity, t->slots, lb->max_keys,
                              lb->scratch_keys, lb->scratch_columns, 0, 0, NULL, NULL, NULL, NULL, b->indptr,
                              lb->max_entries, lb->indices);
    if (status != FC_OK)
        return status;
    const ff_tokens rows = {num_tokens, b->indptr, lb->indices, NULL};
    return ft_tag(t, scores, b, num_tokens, num_sequences, offsets, NULL, &rows, token_class, path, score);
}
