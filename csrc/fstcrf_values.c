/* fstcrf_values.c -- see fstcrf_values.h. */
#include <string.h>

#include "fstcrf_hashing.h"
#include "fstcrf_hashing_private.h"
#include "fstcrf_kernel.h"
#include "fstcrf_values.h"

/* Offsets beyond this either side are refused (templates allow a million). */
#define MAX_ITEM_OFFSET ((int64_t)1 << 40)

/* The arguments every item's values are read from. */
typedef struct {
    int64_t num_tokens;
    const int64_t *token_rows;
    int64_t stride;
    const uint64_t *single;
    const int64_t *list_span;
    const uint64_t *list_hashes;
    const int64_t *text_span;
    const uint8_t *text_bytes;
    uint64_t salt;
} sources;

/* The boundary hash of the last step met, which the next tokens and sentences meet again. */
typedef struct {
    int before;
    int64_t step;
    uint64_t hash;
} boundary_memo;

static uint64_t boundary(boundary_memo *memo, int before, int64_t step, uint64_t salt)
{
    if (memo->step != step || memo->before != before) {
        memo->hash = fh_boundary_hash(before, step, salt);
        memo->before = before;
        memo->step = step;
    }
    return memo->hash;
}

static inline int64_t row_of(const sources *s, int64_t column, int64_t token)
{
    return s->token_rows[column * s->num_tokens + token];
}

static inline const int64_t *span_of(const int64_t *spans, int64_t stride, int64_t table, int64_t row)
{
    return spans + 2 * (table * stride + row);
}

/* 1 if the bytes are a boundary value's text: "__BOS-" or "__EOS+", ASCII digits, "__". */
static int reads_as_boundary(const uint8_t *text, int64_t length)
{
    if (length < 9 || memcmp(text + length - 2, "__", 2) != 0 ||
        (memcmp(text, "__BOS-", 6) != 0 && memcmp(text, "__EOS+", 6) != 0))
        return 0;
    for (int64_t i = 6; i < length - 2; ++i)
        if (text[i] < '0' || text[i] > '9')
            return 0;
    return 1;
}

/* How many bytes escaping adds to a text: one per "\" and "|". */
static int64_t escapes_in(const uint8_t *text, int64_t length)
{
    int64_t count = 0;
    for (int64_t i = 0; i < length; ++i)
        count += text[i] == '\\' || text[i] == '|';
    return count;
}

/* The FV_TYPES value of the token at `position` of a sentence of `length` tokens from `first`. */
static uint64_t type_sequence(const sources *s, const int64_t *item, int64_t first, int64_t length,
                              int64_t position)
{
    static const uint8_t begin = '<', end = '>', space = ' ', backslash = '\\';
    const int64_t column = item[1], table = item[2], low = item[3], high = item[4];
    int64_t total = high - low;         /* the spaces */
    int lone_boundary = 0;
    for (int64_t o = low; o <= high; ++o) {
        const int64_t target = position + o;
        if (target < 0 || target >= length) {
            ++total;
            continue;
        }
        const int64_t *span = span_of(s->text_span, s->stride, table, row_of(s, column, first + target));
        total += span[1] - span[0] + escapes_in(s->text_bytes + span[0], span[1] - span[0]);
        if (low == high)
            lone_boundary = reads_as_boundary(s->text_bytes + span[0], span[1] - span[0]);
    }
    fh_stream stream;
    fh_stream_begin(&stream, total + lone_boundary, s->salt);
    if (lone_boundary)
        fh_stream_bytes(&stream, &backslash, 1);
    for (int64_t o = low; o <= high; ++o) {
        const int64_t target = position + o;
        if (o > low)
            fh_stream_bytes(&stream, &space, 1);
        if (target < 0 || target >= length) {
            fh_stream_bytes(&stream, target < 0 ? &begin : &end, 1);
            continue;
        }
        const int64_t *span = span_of(s->text_span, s->stride, table, row_of(s, column, first + target));
        const uint8_t *text = s->text_bytes + span[0];
        int64_t from = 0;
        for (int64_t i = 0; i < span[1] - span[0]; ++i)
            if (text[i] == '\\' || text[i] == '|') {
                fh_stream_bytes(&stream, text + from, i - from);
                fh_stream_bytes(&stream, &backslash, 1);
                from = i;
            }
        fh_stream_bytes(&stream, text + from, span[1] - span[0] - from);
    }
    return fh_stream_end(&stream);
}

/* How many values the item gives the token at `position` of a sentence (an upper bound
 * for FV_BAG, whose equal values are dropped when written). */
static int64_t count_of(const sources *s, const int64_t *item, int64_t first, int64_t length,
                        int64_t position)
{
    const int64_t kind = item[0], low = item[3], high = item[4];
    if (kind == FV_BAG) {
        const int64_t from = low > -position ? low : -position;
        const int64_t to = high < length - 1 - position ? high : length - 1 - position;
        return to >= from ? to - from + 1 : 0;
    }
    const int64_t target = position + low;
    if (kind != FV_LIST || target < 0 || target >= length)
        return 1;
    const int64_t *span = span_of(s->list_span, s->stride, item[2], row_of(s, item[1], first + target));
    return span[1] - span[0];
}

/* Write the item's values at the token at `position` of a sentence from hashes[*at] on. */
static void write_values(const sources *s, const int64_t *item, int64_t first, int64_t length,
                         int64_t position, boundary_memo *memo, uint64_t *hashes, int64_t *at)
{
    const int64_t kind = item[0], column = item[1], table = item[2], low = item[3], high = item[4];
    if (kind == FV_TYPES) {
        hashes[(*at)++] = type_sequence(s, item, first, length, position);
        return;
    }
    if (kind == FV_BAG) {
        const int64_t start = *at;
        for (int64_t o = low; o <= high; ++o) {
            const int64_t target = position + o;
            if (target < 0 || target >= length)
                continue;
            const uint64_t h = s->single[table * s->stride + row_of(s, column, first + target)];
            int64_t k = start;
            while (k < *at && hashes[k] != h)
                ++k;
            if (k == *at)
                hashes[(*at)++] = h;
        }
        return;
    }
    const int64_t target = position + low;
    if (target < 0 || target >= length) {
        const int before = target < 0;
        hashes[(*at)++] = boundary(memo, before, before ? -target : target - length + 1, s->salt);
        return;
    }
    const int64_t row = row_of(s, column, first + target);
    if (kind == FV_SINGLE) {
        hashes[(*at)++] = s->single[table * s->stride + row];
        return;
    }
    const int64_t *span = span_of(s->list_span, s->stride, table, row);
    memcpy(hashes + *at, s->list_hashes + span[0], (size_t)(span[1] - span[0]) * sizeof *hashes);
    *at += span[1] - span[0];
}

/* FC_OK if the offsets, rows and items are in range and every span an item may read
 * (that of each token's own row) lies within its bytes or hashes. */
static int check_arguments(int64_t num_tokens, int64_t num_sequences, const int64_t *sentence_offsets,
                           int32_t num_columns, int64_t num_rows, int64_t stride, int32_t num_singles,
                           int32_t num_lists, int64_t num_list_hashes, int32_t num_texts,
                           int64_t num_text_bytes, int32_t num_items, const int64_t *items,
                           const uint8_t *mask, const sources *s)
{
    if (num_tokens < 0 || num_sequences < 0 || num_columns < 0 || num_items < 0 || num_rows < 0 ||
        stride < num_rows || num_singles < 0 || num_lists < 0 || num_texts < 0 || num_list_hashes < 0 ||
        num_text_bytes < 0 || sentence_offsets[0] != 0 || sentence_offsets[num_sequences] != num_tokens)
        return FC_BAD_ARGUMENT;
    for (int64_t i = 0; i < num_sequences; ++i)
        if (sentence_offsets[i + 1] < sentence_offsets[i])
            return FC_BAD_ARGUMENT;
    for (int64_t k = 0; k < (int64_t)num_columns * num_tokens; ++k)
        if (s->token_rows[k] < 0 || s->token_rows[k] >= num_rows)
            return FC_BAD_ARGUMENT;
    for (int32_t j = 0; j < num_items; ++j) {
        const int64_t *item = items + (int64_t)j * FV_FIELDS;
        const int64_t kind = item[0], column = item[1], table = item[2], low = item[3], high = item[4];
        const int64_t tables = kind == FV_SINGLE || kind == FV_BAG ? num_singles
                               : kind == FV_LIST                   ? num_lists
                               : kind == FV_TYPES                  ? num_texts
                                                                   : 0;
        if (table < 0 || table >= tables || column < 0 || column >= num_columns || low > high ||
            low <= -MAX_ITEM_OFFSET || high >= MAX_ITEM_OFFSET ||
            ((kind == FV_SINGLE || kind == FV_LIST) && low != high) || (item[5] != 0 && mask == NULL))
            return FC_BAD_ARGUMENT;
        if (kind != FV_LIST && kind != FV_TYPES)
            continue;
        const int64_t *spans = kind == FV_LIST ? s->list_span : s->text_span;
        const int64_t limit = kind == FV_LIST ? num_list_hashes : num_text_bytes;
        for (int64_t t = 0; t < num_tokens; ++t) {
            const int64_t *span = span_of(spans, stride, table, row_of(s, column, t));
            if (span[0] < 0 || span[0] > span[1] || span[1] > limit)
                return FC_BAD_ARGUMENT;
        }
    }
    return FC_OK;
}

int fv_item_values(int64_t num_tokens, int64_t num_sequences, const int64_t *sentence_offsets,
                   int32_t num_columns, const int64_t *token_rows, int64_t num_rows, int64_t stride,
                   int32_t num_singles, const uint64_t *single, int32_t num_lists,
                   const int64_t *list_span, int64_t num_list_hashes, const uint64_t *list_hashes,
                   int32_t num_texts, const int64_t *text_span, int64_t num_text_bytes,
                   const uint8_t *text_bytes, int32_t num_items, const int64_t *items,
                   const uint8_t *mask, uint64_t salt, int64_t *value_ptr, int64_t capacity,
                   uint64_t *hashes, int64_t *needed)
{
    const sources s = {num_tokens, token_rows, stride, single, list_span, list_hashes, text_span, text_bytes, salt};
    int status = check_arguments(num_tokens, num_sequences, sentence_offsets, num_columns, num_rows, stride,
                                 num_singles, num_lists, num_list_hashes, num_texts, num_text_bytes, num_items,
                                 items, mask, &s);
    if (status != FC_OK)
        return status;
    int64_t room = 0;
    for (int32_t j = 0; j < num_items; ++j) {
        const int64_t *item = items + (int64_t)j * FV_FIELDS;
        for (int64_t i = 0; i < num_sequences; ++i) {
            const int64_t first = sentence_offsets[i], length = sentence_offsets[i + 1] - first;
            for (int64_t t = 0; t < length; ++t)
                if (item[5] == 0 || mask[first + t])
                    room += count_of(&s, item, first, length, t);
        }
    }
    *needed = room;
    if (room > capacity)
        return FV_SHORT;
    boundary_memo memo = {0, -1, 0};
    int64_t at = 0;
    for (int32_t j = 0; j < num_items; ++j) {
        const int64_t *item = items + (int64_t)j * FV_FIELDS;
        int64_t *ptr = value_ptr + (int64_t)j * (num_tokens + 1);
        ptr[0] = at;
        for (int64_t i = 0; i < num_sequences; ++i) {
            const int64_t first = sentence_offsets[i], length = sentence_offsets[i + 1] - first;
            for (int64_t t = 0; t < length; ++t) {
                if (item[5] == 0 || mask[first + t])
                    write_values(&s, item, first, length, t, &memo, hashes, &at);
                ptr[first + t + 1] = at;
            }
        }
    }
    return FC_OK;
}
