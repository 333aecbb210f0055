/*
 * fstcrf_values.h -- the values the items of a template give every token of a batch,
 * as the hashes of their names (fstcrf_hashing.h): the fourth step of feature
 * extraction (columns -> token table -> values -> hashes -> rows), one call for all
 * the items of a batch, whatever their number.
 *
 * The values come from a store of what each distinct column value gives, kept across
 * batches by fstcrf.features.hashing.ValueStore.  Row r of the store is one column
 * value; each table of the store holds one entry per row:
 *
 *     single    [Ts, stride]     the hash of the value's name under a transform
 *                                (escaped, as a template line names it)
 *     list_span [Tl, stride, 2]  the value's list (its prefixes, suffixes or n-grams):
 *                                list_hashes[span[0] .. span[1]-1]
 *     text_span [Tx, stride, 2]  the value's text under a transform, unescaped:
 *                                text_bytes[span[0] .. span[1]-1] (UTF-8)
 *
 * Each item reads one column (token_rows: the store row of each token's value) and
 * one table, and is a row of items int64 [J, FV_FIELDS]: kind, column, table, low,
 * high, masked.
 *
 *     FV_SINGLE  one value: the single hash of the value at offset low (= high) from
 *                the token; past the sentence, the boundary value "__BOS-k__" k tokens
 *                before it or "__EOS+k__" k tokens after it
 *     FV_LIST    the list of the value at offset low (= high); past the sentence, the
 *                boundary value alone
 *     FV_BAG     the distinct single hashes of the values at offsets low .. high within
 *                the sentence (two values are the same when their hashes are)
 *     FV_TYPES   one value: the texts at offsets low .. high, each "\" and "|" preceded
 *                by "\", joined by spaces, with "<" for an offset before the sentence
 *                and ">" after it; a lone text that reads as a boundary value (the
 *                whole of "__BOS-" or "__EOS+", ASCII digits and "__") is preceded by "\"
 *
 * An item whose `masked` is not 0 has values only at the tokens that mask marks
 * (none elsewhere).  Conventions are those of fstcrf_kernel.h: C-contiguous arrays
 * with shapes in brackets, no globals, no allocation.  Every index read from the
 * arguments (offsets, rows, items, spans) is checked before it is used.
 */
#ifndef FSTCRF_VALUES_H
#define FSTCRF_VALUES_H

#include <stdint.h>

#define FV_SINGLE 0
#define FV_LIST 1
#define FV_BAG 2
#define FV_TYPES 3
/* The fields of an item: kind, column, table, low, high, masked. */
#define FV_FIELDS 6
/* Returned by fv_item_values when the hashes do not fit in the capacity given. */
#define FV_SHORT 4

/* The value hashes of J items at the N tokens of B sentences.
 *   sentence_offsets [B+1]   from 0 to N, non-decreasing
 *   token_rows   [C, N]      the store row of each token's value of column c, in [0, num_rows)
 *   num_rows                 R: rows 0 .. R-1 of every table are filled
 *   stride                   the row stride of the tables, at least R
 *   single       [Ts, stride]
 *   list_span    [Tl, stride, 2], list_hashes [H]
 *   text_span    [Tx, stride, 2], text_bytes [X]
 *   items        [J, FV_FIELDS]
 *   mask         [N] or NULL (then no item may be masked)
 *   value_ptr    [J, N+1]    OVERWRITTEN: item j's values at token t are
 *                            hashes[value_ptr[j, t] .. value_ptr[j, t+1]-1]
 *   hashes       [capacity]  OVERWRITTEN in its first value_ptr[J-1, N] entries, item
 *                            by item, token by token
 *   needed       [1]         OVERWRITTEN: the room the values need (at least what they take)
 * Returns FC_BAD_ARGUMENT, before writing, if an offset, row, item or span is out of
 * range; FV_SHORT, writing only `needed`, if the capacity is less than it; else FC_OK. */
int fv_item_values(int64_t num_tokens, int64_t num_sequences, const int64_t *sentence_offsets,
                   int32_t num_columns, const int64_t *token_rows, int64_t num_rows, int64_t stride,
                   int32_t num_singles, const uint64_t *single, int32_t num_lists,
                   const int64_t *list_span, int64_t num_list_hashes, const uint64_t *list_hashes,
                   int32_t num_texts, const int64_t *text_span, int64_t num_text_bytes,
                   const uint8_t *text_bytes, int32_t num_items, const int64_t *items,
                   const uint8_t *mask, uint64_t salt, int64_t *value_ptr, int64_t capacity,
                   uint64_t *hashes, int64_t *needed);

#endif
