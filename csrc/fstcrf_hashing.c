/* fstcrf_hashing.c -- see fstcrf_hashing.h. */
#include <string.h>

#include "fstcrf_hashing.h"
#include "fstcrf_hashing_private.h"
#include "fstcrf_kernel.h"
#include "fstcrf_portable.h"

#define CHECKSUM_PRIME 0x9e3779b97f4a7c15ULL
#define LENGTH_PRIME 0xc2b2ae3d27d4eb4fULL

uint64_t fh_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static inline uint64_t load_word(const uint8_t *p)
{
    uint64_t word;
    memcpy(&word, p, 8);
    return word;                /* byte order of the machine: the files are little-endian,
                                   and so are the machines fstcrf builds on */
}

static inline uint64_t checksum_step(uint64_t lane, uint64_t word)
{
    /* a bijection of the lane for a fixed word and of the word for a fixed lane */
    uint64_t x = (lane ^ word) * CHECKSUM_PRIME;
    return (x << 31) | (x >> 33);
}

void fh_checksum(const uint8_t *data, int64_t size, uint64_t *digest)
{
    uint64_t lane[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL,
                        0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};
    int64_t full = size - size % 32;
    for (int64_t i = 0; i < full; i += 32)
        for (int l = 0; l < 4; ++l)
            lane[l] = checksum_step(lane[l], load_word(data + i + 8 * l));
    uint8_t tail[32] = {0};
    memcpy(tail, data + full, (size_t)(size - full));
    for (int l = 0; l < 4; ++l)
        digest[l] = fh_mix(checksum_step(lane[l], load_word(tail + 8 * l)) ^ (uint64_t)size);
}

static uint64_t string_hash(const uint8_t *p, int64_t length, uint64_t salt)
{
    uint64_t h = fh_mix(salt ^ ((uint64_t)length * LENGTH_PRIME));
    int64_t j = 0;
    for (; j + 8 <= length; j += 8)
        h = fh_mix(h ^ load_word(p + j));
    if (j < length) {
        uint8_t tail[8] = {0};
        memcpy(tail, p + j, (size_t)(length - j));
        h = fh_mix(h ^ load_word(tail));
    }
    return h;
}

void fh_stream_begin(fh_stream *stream, int64_t length, uint64_t salt)
{
    stream->hash = fh_mix(salt ^ ((uint64_t)length * LENGTH_PRIME));
    stream->filled = 0;
}

void fh_stream_bytes(fh_stream *stream, const uint8_t *bytes, int64_t count)
{
    for (int64_t i = 0; i < count; ++i) {
        stream->pending[stream->filled++] = bytes[i];
        if (stream->filled == 8) {
            stream->hash = fh_mix(stream->hash ^ load_word(stream->pending));
            stream->filled = 0;
        }
    }
}

uint64_t fh_stream_end(fh_stream *stream)
{
    if (stream->filled > 0) {      /* the tail, padded with zeros as string_hash pads it */
        memset(stream->pending + stream->filled, 0, (size_t)(8 - stream->filled));
        stream->hash = fh_mix(stream->hash ^ load_word(stream->pending));
        stream->filled = 0;
    }
    return stream->hash;
}

void fh_string_hashes(const uint8_t *blob, const int64_t *offsets, int64_t n, uint64_t salt,
                      uint64_t *hashes)
{
    for (int64_t i = 0; i < n; ++i)
        hashes[i] = string_hash(blob + offsets[i], offsets[i + 1] - offsets[i], salt);
}

int fh_line_hashes(const uint8_t *text, int64_t size, int64_t n, uint64_t salt, uint64_t *hashes)
{
    int64_t lines = n > 0;
    for (const uint8_t *p = text, *end = text + size; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; ++p)
        ++lines;
    if (n < 1 || lines != n)
        return FC_BAD_ARGUMENT;
    const uint8_t *start = text, *end = text + size;
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t *stop = i + 1 < n ? memchr(start, '\n', (size_t)(end - start)) : end;
        hashes[i] = string_hash(start, stop - start, salt);
        start = stop + 1;
    }
    return FC_OK;
}

/* Append the hashes of the distinct substrings of one UTF-8 string (see
 * fh_substring_hashes) to hashes, from *count on; FC_BAD_ARGUMENT for a longer string
 * or more than capacity in all. */
static int substrings_of(const uint8_t *text, int64_t size, int32_t kind, int32_t low, int32_t high,
                         uint64_t salt, int64_t capacity, int64_t *count, uint64_t *hashes)
{
    int64_t starts[FH_MAX_CODE_POINTS + 1];   /* byte offset of each code point, and the end */
    int64_t kept[FH_MAX_CODE_POINTS];         /* where the kept substrings of one length start */
    int64_t points = 0;
    for (int64_t b = 0; b < size; ++b)
        if ((text[b] & 0xc0) != 0x80) {     /* not a continuation byte: a code point starts */
            if (points == FH_MAX_CODE_POINTS)
                return FC_BAD_ARGUMENT;
            starts[points++] = b;
        }
    starts[points] = size;
    const int64_t longest = points < high ? points : high;
    for (int64_t length = low; length <= longest; ++length) {
        /* prefixes start at 0, suffixes at points - length, substrings anywhere */
        const int64_t first = kind == FH_SUFFIXES ? points - length : 0;
        const int64_t last = kind == FH_SUBSTRINGS ? points - length : first;
        const int64_t run = *count;         /* this length's hashes start here */
        for (int64_t at = first; at <= last; ++at) {
            const int64_t from = starts[at], bytes = starts[at + length] - from;
            const uint64_t h = string_hash(text + from, bytes, salt);
            int repeated = 0;               /* kept already: an equal string of this length */
            for (int64_t k = run; k < *count && !repeated; ++k) {
                const int64_t other = kept[k - run];
                repeated = hashes[k] == h && starts[other + length] - starts[other] == bytes &&
                           memcmp(text + starts[other], text + from, (size_t)bytes) == 0;
            }
            if (repeated)
                continue;
            if (*count == capacity)
                return FC_BAD_ARGUMENT;
            kept[*count - run] = at;
            hashes[(*count)++] = h;
        }
    }
    return FC_OK;
}

static int substring_arguments(int32_t kind, int32_t low, int32_t high)
{
    return low >= 1 && high >= low && (kind == FH_PREFIXES || kind == FH_SUFFIXES || kind == FH_SUBSTRINGS);
}

int fh_substring_hashes(const uint8_t *blob, const int64_t *offsets, int64_t n, int32_t kind, int32_t low,
                        int32_t high, uint64_t salt, int64_t capacity, int64_t *ptr, uint64_t *hashes)
{
    if (n < 0 || !substring_arguments(kind, low, high))
        return FC_BAD_ARGUMENT;
    int64_t count = 0;
    ptr[0] = 0;
    for (int64_t i = 0; i < n; ++i) {
        const int status = substrings_of(blob + offsets[i], offsets[i + 1] - offsets[i], kind, low, high, salt,
                                         capacity, &count, hashes);
        if (status != FC_OK)
            return status;
        ptr[i + 1] = count;
    }
    return FC_OK;
}

static inline uint8_t character_class(uint8_t c)
{
    if (c >= 'A' && c <= 'Z')
        return 'X';
    if (c >= 'a' && c <= 'z')
        return 'x';
    if (c >= '0' && c <= '9')
        return 'd';
    return c;
}

/* Write transform `kind` of text[0 .. size-1] (ASCII) into out; its length. */
static int64_t transformed(const uint8_t *text, int64_t size, int32_t kind, int32_t length, uint8_t *out)
{
    int64_t count = 0;
    switch (kind) {
    case FH_IDENTITY:
        memcpy(out, text, (size_t)size);
        return size;
    case FH_LOWER:
        for (int64_t b = 0; b < size; ++b)
            out[b] = text[b] >= 'A' && text[b] <= 'Z' ? (uint8_t)(text[b] + ('a' - 'A')) : text[b];
        return size;
    case FH_SHAPE:
        for (int64_t b = 0; b < size; ++b) {
            const uint8_t c = character_class(text[b]);
            if (count == 0 || out[count - 1] != c)
                out[count++] = c;
        }
        return count;
    case FH_LONG_SHAPE:
        for (int64_t b = 0; b < size; ++b)
            out[b] = character_class(text[b]);
        return size;
    case FH_SHAPE2: {
        if (size <= 4)
            return transformed(text, size, FH_LONG_SHAPE, 0, out);
        uint8_t present[128] = {0};
        for (int64_t b = 2; b < size - 2; ++b)
            present[character_class(text[b])] = 1;
        out[count++] = character_class(text[0]);
        out[count++] = character_class(text[1]);
        for (int c = 0; c < 128; ++c)
            if (present[c])
                out[count++] = (uint8_t)c;
        out[count++] = character_class(text[size - 2]);
        out[count++] = character_class(text[size - 1]);
        return count;
    }
    case FH_PREFIX:
        count = size < length ? size : length;
        memcpy(out, text, (size_t)count);
        return count;
    default: /* FH_SUFFIX */
        count = size < length ? size : length;
        memcpy(out, text + size - count, (size_t)count);
        return count;
    }
}

static int transform_arguments(int64_t transform, int64_t length)
{
    return transform >= FH_IDENTITY && transform <= FH_SUFFIX &&
           ((transform != FH_PREFIX && transform != FH_SUFFIX) || (length >= 1 && length <= FH_MAX_CODE_POINTS));
}

/* The column of ``key`` in a table of fh_build_table, or -1. */
static inline int64_t find(uint64_t key, uint64_t mask, const uint64_t *slots)
{
    for (uint64_t i = key & mask;; i = (i + 1) & mask) {
        if (slots[2 * i + 1] == 0)
            return -1;
        if (slots[2 * i] == key)
            return (int64_t)slots[2 * i + 1] - 1;
    }
}

/* Whether row t of fh_store_values' tables is one it can fill. */
static int store_table_arguments(const int64_t *t, int64_t single_rows, int64_t list_rows, int64_t text_rows,
                                 int seen_given)
{
    const int64_t rows = t[0] == FH_STORE_LIST ? list_rows : t[0] == FH_STORE_TEXT ? text_rows : single_rows;
    if (t[0] < FH_STORE_SINGLE || t[0] > FH_STORE_SEEN || (t[0] == FH_STORE_SEEN && !seen_given) ||
        !transform_arguments(t[1], t[2]) || t[7] < 0 || t[7] >= rows)
        return 0;
    return t[0] != FH_STORE_LIST || ((t[3] == 0 || t[3] == 1) && t[4] >= FH_PREFIXES && t[4] <= FH_SUBSTRINGS &&
                                     t[5] >= 1 && t[6] >= t[5] && t[6] <= FH_MAX_CODE_POINTS);
}

/* Whether a byte of a string is one fh_store_values takes: ASCII that escaping leaves alone. */
static int stored_byte(uint8_t byte)
{
    return byte < 0x80 && byte != '\\' && byte != '|' && byte != '_';
}

int fh_store_values(const uint8_t *text, int64_t size, int64_t n, uint64_t salt, int32_t num_tables,
                    const int64_t *tables, int64_t first, int64_t stride, int64_t single_rows, uint64_t *single,
                    int64_t list_rows, int64_t *list_span, int64_t list_base, int64_t list_capacity,
                    uint64_t *list_hashes, int64_t text_rows, int64_t *text_span, int64_t text_base,
                    int64_t text_capacity, uint8_t *text_bytes, int64_t seen_capacity, const uint64_t *seen_slots,
                    const uint64_t *seen_marks, int64_t *written)
{
    const int seen_given = seen_slots != NULL && seen_marks != NULL && seen_capacity > 0 &&
                           (seen_capacity & (seen_capacity - 1)) == 0;
    if (n < 1 || size < n - 1 || num_tables < 0 || first < 0 || first + n > stride || list_base < 0 ||
        list_base > list_capacity || text_base < 0 || text_base > text_capacity)
        return FC_BAD_ARGUMENT;
    for (int32_t j = 0; j < num_tables; ++j)
        if (!store_table_arguments(tables + (int64_t)j * FH_STORE_FIELDS, single_rows, list_rows, text_rows,
                                   seen_given))
            return FC_BAD_ARGUMENT;
    uint8_t out[FH_MAX_CODE_POINTS];      /* a transform is never longer than its string */
    int64_t list_count = list_base, text_count = text_base, start = 0;
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t *value = text + start;
        int64_t length = 0;                 /* up to the newline that ends it, or the end of all */
        while (start + length < size && value[length] != '\n') {
            if (length == FH_MAX_CODE_POINTS || !stored_byte(value[length]))
                return FC_BAD_ARGUMENT;
            ++length;
        }
        start += length + 1;
        if ((i + 1 < n) != (start <= size))   /* n strings, no fewer, no more */
            return FC_BAD_ARGUMENT;
        for (int32_t j = 0; j < num_tables; ++j) {
            const int64_t *t = tables + (int64_t)j * FH_STORE_FIELDS;
            const int64_t cell = t[7] * stride + first + i;
            const int marked = t[0] == FH_STORE_LIST && t[3];
            if (marked && length > FH_MAX_CODE_POINTS - 2)
                return FC_BAD_ARGUMENT;
            int64_t count = transformed(value, length, (int32_t)t[1], (int32_t)t[2], out + marked);
            if (marked) {
                out[0] = '<';
                out[++count] = '>';
                ++count;
            }
            if (t[0] == FH_STORE_SINGLE) {
                single[cell] = string_hash(out, count, salt);
            } else if (t[0] == FH_STORE_SEEN) {
                transformed(out, count, FH_LOWER, 0, out);    /* in place: a byte for a byte */
                const uint64_t mask = (uint64_t)seen_capacity - 1;
                single[cell] = seen_marks[find(string_hash(out, count, salt), mask, seen_slots) < 0];
            } else if (t[0] == FH_STORE_LIST) {
                list_span[2 * cell] = list_count;
                if (substrings_of(out, count, (int32_t)t[4], (int32_t)t[5], (int32_t)t[6], salt, list_capacity,
                                  &list_count, list_hashes) != FC_OK)
                    return FC_BAD_ARGUMENT;
                list_span[2 * cell + 1] = list_count;
            } else {
                if (text_count + count > text_capacity)
                    return FC_BAD_ARGUMENT;
                memcpy(text_bytes + text_count, out, (size_t)count);
                text_span[2 * cell] = text_count;
                text_count += count;
                text_span[2 * cell + 1] = text_count;
            }
        }
    }
    written[0] = list_count - list_base;
    written[1] = text_count - text_base;
    return FC_OK;
}

void fh_chain(uint64_t *keys, const uint64_t *values, int64_t n)
{
    for (int64_t i = 0; i < n; ++i)
        keys[i] = fh_mix(keys[i] ^ values[i]);
}

int fh_build_table(const uint64_t *keys, int64_t n, int64_t capacity, uint64_t *slots)
{
    uint64_t mask = (uint64_t)capacity - 1;
    memset(slots, 0, (size_t)capacity * 2 * sizeof *slots);
    for (int64_t c = 0; c < n; ++c) {
        uint64_t i = keys[c] & mask;
        while (slots[2 * i + 1] != 0) {
            if (slots[2 * i] == keys[c])
                return FH_DUPLICATE;
            i = (i + 1) & mask;
        }
        slots[2 * i] = keys[c];
        slots[2 * i + 1] = (uint64_t)c + 1;
    }
    return FC_OK;
}

void fh_lookup(const uint64_t *keys, int64_t n, int64_t capacity, const uint64_t *slots,
               int64_t *columns)
{
    uint64_t mask = (uint64_t)capacity - 1;
    for (int64_t i = 0; i < n; ++i)
        columns[i] = find(keys[i], mask, slots);
}

int64_t fh_factorize(const uint64_t *keys, int64_t n, int64_t capacity, uint64_t *slots, int64_t *codes,
                     int64_t *first, int64_t *counts)
{
    const uint64_t mask = (uint64_t)capacity - 1;
    int64_t distinct = 0;
    memset(slots, 0, (size_t)capacity * 2 * sizeof *slots);
    for (int64_t t = 0; t < n; ++t) {
        uint64_t i = fh_mix(keys[t]) & mask;     /* keys are often small integers: spread them */
        while (slots[2 * i + 1] != 0 && slots[2 * i] != keys[t])
            i = (i + 1) & mask;
        if (slots[2 * i + 1] == 0) {
            slots[2 * i] = keys[t];
            slots[2 * i + 1] = (uint64_t)++distinct;
            first[distinct - 1] = t;
            counts[distinct - 1] = 0;
        }
        codes[t] = (int64_t)slots[2 * i + 1] - 1;
        ++counts[codes[t]];
    }
    return distinct;
}

/* out [m]: the columns known [m] in ascending order.  Each column goes to its rank,
   the number of smaller columns: counting is branch-free and vectorised, where
   sorting a few dozen columns by insertion mispredicts its branches.  Columns are
   distinct (every template has columns of its own) unless two templates' keys
   collide; then the ranks tie, their sum falls short of 0 + 1 + ... + (m - 1),
   and the row is sorted by insertion instead. */
static void sort_row(const int32_t *known, int32_t m, int32_t *out)
{
    int64_t rank_sum = 0;
    for (int32_t i = 0; i < m; ++i) {
        int32_t column = known[i], rank = 0;
        for (int32_t j = 0; j < m; ++j)
            rank += known[j] < column;
        out[rank] = column;
        rank_sum += rank;
    }
    if (rank_sum == (int64_t)m * (m - 1) / 2)
        return;
    for (int32_t i = 0; i < m; ++i) {
        int32_t j = i;
        while (j > 0 && out[j - 1] > known[i]) {
            out[j] = out[j - 1];
            --j;
        }
        out[j] = known[i];
    }
}

uint64_t fh_boundary_hash(int before, int64_t step, uint64_t salt)
{
    char digits[24], text[48];
    int count = 0, length = 0;
    for (; step > 0; step /= 10)
        digits[count++] = (char)('0' + step % 10);
    memcpy(text, before ? "__BOS-" : "__EOS+", 6);
    length = 6;
    while (count > 0)
        text[length++] = digits[--count];
    text[length++] = '_';
    text[length++] = '_';
    return string_hash((const uint8_t *)text, length, salt);
}

int fh_window_hashes(int64_t num_tokens, int64_t num_sequences, const int64_t *sentence_offsets,
                     int32_t num_sources, const uint64_t *sources, int32_t num_observations,
                     const int32_t *source, const int64_t *offset, uint64_t salt, uint64_t *out)
{
    if (num_sequences < 0 || sentence_offsets[0] != 0 || sentence_offsets[num_sequences] != num_tokens)
        return FC_BAD_ARGUMENT;
    for (int64_t i = 0; i < num_sequences; ++i)
        if (sentence_offsets[i + 1] < sentence_offsets[i])
            return FC_BAD_ARGUMENT;
    for (int32_t j = 0; j < num_observations; ++j)
        if (source[j] < 0 || source[j] >= num_sources)
            return FC_BAD_ARGUMENT;
    for (int32_t j = 0; j < num_observations; ++j) {
        const uint64_t *values = sources + (int64_t)source[j] * num_tokens;
        uint64_t *row = out + (int64_t)j * num_tokens;
        const int64_t o = offset[j];
        if (o == 0) {
            memcpy(row, values, (size_t)num_tokens * sizeof *row);
            continue;
        }
        /* the boundary hashes of the last step met, which the next sentences meet again */
        int64_t hashed_step = -1;
        uint64_t hashed = 0;
        for (int64_t i = 0; i < num_sequences; ++i) {
            const int64_t first = sentence_offsets[i], length = sentence_offsets[i + 1] - first;
            for (int64_t t = 0; t < length; ++t) {
                const int64_t target = t + o;
                if (target >= 0 && target < length) {
                    row[first + t] = values[first + target];
                    continue;
                }
                const int64_t step = target < 0 ? -target : target - length + 1;
                if (step != hashed_step) {
                    hashed = fh_boundary_hash(target < 0, step, salt);
                    hashed_step = step;
                }
                row[first + t] = hashed;
            }
        }
    }
    return FC_OK;
}

int fh_predicate_rows(int64_t num_tokens, int32_t num_observations, const uint64_t *value_hashes,
                      int32_t num_templates, const uint64_t *seeds, const int32_t *item_ptr,
                      const int32_t *items, int64_t capacity, const uint64_t *slots,
                      int32_t *scratch, int64_t *indptr, int32_t *indices)
{
    if (item_ptr[0] != 0)
        return FC_BAD_ARGUMENT;
    for (int32_t k = 0; k < num_templates; ++k) {
        if (item_ptr[k + 1] < item_ptr[k])
            return FC_BAD_ARGUMENT;
        for (int32_t i = item_ptr[k]; i < item_ptr[k + 1]; ++i)
            if (items[i] < 0 || items[i] >= num_observations)
                return FC_BAD_ARGUMENT;
    }
    uint64_t mask = (uint64_t)capacity - 1;
    uint64_t keys[FH_GROUP][FH_BLOCK];
    int64_t nnz = 0;
    indptr[0] = 0;
    /* block by block, FH_GROUP templates at a time: the keys of a block are computed,
       their slots prefetched, then probed, so that the cache misses overlap (a short
       block, one sentence's tokens, still has FH_GROUP times its tokens in flight) */
    for (int64_t start = 0; start < num_tokens; start += FH_BLOCK) {
        int64_t n = num_tokens - start < FH_BLOCK ? num_tokens - start : FH_BLOCK;
        for (int32_t group = 0; group < num_templates; group += FH_GROUP) {
            const int32_t end = num_templates - group < FH_GROUP ? num_templates : group + FH_GROUP;
            for (int32_t k = group; k < end; ++k) {
                uint64_t *own = keys[k - group];
                for (int64_t t = 0; t < n; ++t)
                    own[t] = seeds[k];
                for (int32_t i = item_ptr[k]; i < item_ptr[k + 1]; ++i) {
                    const uint64_t *hashes = value_hashes + (int64_t)items[i] * num_tokens + start;
                    for (int64_t t = 0; t < n; ++t)
                        own[t] = fh_mix(own[t] ^ hashes[t]);
                }
                for (int64_t t = 0; t < n; ++t)
                    FC_PREFETCH(slots + 2 * (own[t] & mask));
            }
            for (int32_t k = group; k < end; ++k)
                for (int64_t t = 0; t < n; ++t)
                    scratch[t * num_templates + k] = (int32_t)find(keys[k - group][t], mask, slots);
        }
        for (int64_t t = 0; t < n; ++t) {
            int32_t *known = scratch + t * num_templates;
            int32_t m = 0;
            for (int32_t k = 0; k < num_templates; ++k)     /* the known columns, in template order */
                if (known[k] >= 0)
                    known[m++] = known[k];
            sort_row(known, m, indices + nnz);
            nnz += m;
            indptr[start + t + 1] = nnz;
        }
    }
    return FC_OK;
}

/* ------------------------------------------------------------------------ */
/* Reading rows: lines that read a lower tagger's label, under each label    */
/* ------------------------------------------------------------------------ */

int fh_reading_rows(int64_t num_tokens, int32_t num_values, int32_t num_observations,
                    const uint64_t *value_hashes, int32_t num_read, const uint64_t *read_hashes,
                    int32_t num_lines, const uint64_t *seeds, const int32_t *item_ptr,
                    const int32_t *items, int64_t capacity, const uint64_t *slots, uint64_t *keys,
                    int32_t *scratch, int64_t *indptr, int32_t *indices)
{
    if (num_tokens < 0 || num_values < 0 || num_lines < 0 || item_ptr[0] != 0)
        return FC_BAD_ARGUMENT;
    for (int32_t r = 0; r < num_lines; ++r) {
        if (item_ptr[r + 1] < item_ptr[r])
            return FC_BAD_ARGUMENT;
        for (int32_t i = item_ptr[r]; i < item_ptr[r + 1]; ++i)
            if (items[i] < 0 || items[i] >= num_observations + num_read)
                return FC_BAD_ARGUMENT;
    }
    const uint64_t mask = (uint64_t)capacity - 1;
    const int64_t K = num_values, R = num_lines;
    int64_t nnz = 0;
    indptr[0] = 0;
    /* token by token: the keys of every line under every value (keys [R, K]) are
       chained and their slots prefetched, then probed, so that the misses overlap */
    for (int64_t t = 0; t < num_tokens; ++t) {
        for (int64_t r = 0; r < R; ++r) {
            uint64_t *own = keys + r * K;
            for (int64_t k = 0; k < K; ++k)
                own[k] = seeds[r];
            for (int32_t i = item_ptr[r]; i < item_ptr[r + 1]; ++i) {
                if (items[i] < num_observations) {
                    const uint64_t value = value_hashes[(int64_t)items[i] * num_tokens + t];
                    for (int64_t k = 0; k < K; ++k)
                        own[k] = fh_mix(own[k] ^ value);
                } else {
                    const uint64_t *values = read_hashes + (int64_t)(items[i] - num_observations) * K;
                    for (int64_t k = 0; k < K; ++k)
                        own[k] = fh_mix(own[k] ^ values[k]);
                }
            }
            for (int64_t k = 0; k < K; ++k)
                FC_PREFETCH(slots + 2 * (own[k] & mask));
        }
        for (int64_t k = 0; k < K; ++k) {
            int32_t m = 0;
            for (int64_t r = 0; r < R; ++r) {  /* the known columns, in line order */
                const int64_t column = find(keys[r * K + k], mask, slots);
                if (column >= 0)
                    scratch[m++] = (int32_t)column;
            }
            sort_row(scratch, m, indices + nnz);
            nnz += m;
            indptr[t * K + k + 1] = nnz;
        }
    }
    return FC_OK;
}
