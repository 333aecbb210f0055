/*
 * fstcrf_conll.c -- CoNLL column files scanned and written in C (see the header).
 */
#include <stddef.h>
#include <string.h>

#include "fstcrf_conll.h"
#include "fstcrf_kernel.h"

static const uint8_t DOCSTART[] = "-DOCSTART-";
enum { DOCSTART_LENGTH = 10 };

/* The bytes str.strip(" \t\r\f\v") removes and runs of which split fields. */
static inline int is_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static inline int continuation(uint8_t c)
{
    return (c & 0xC0) == 0x80;
}

/* 1 if data [n] is UTF-8 as Python's strict decoder takes it (no surrogates, no
 * overlong forms, nothing above U+10FFFF), else 0. */
static int valid_utf8(const uint8_t *data, int64_t n)
{
    int64_t i = 0;
    while (i < n) {
        while (i + 8 <= n) {  /* ASCII a word at a time */
            uint64_t word;
            memcpy(&word, data + i, 8);
            if (word & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        const uint8_t c = data[i];
        if (c < 0x80) {
            ++i;
        } else if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || !continuation(data[i + 1]))
                return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n || !continuation(data[i + 1]) || !continuation(data[i + 2]))
                return 0;
            if ((c == 0xE0 && data[i + 1] < 0xA0) || (c == 0xED && data[i + 1] > 0x9F))
                return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n || !continuation(data[i + 1]) || !continuation(data[i + 2])
                || !continuation(data[i + 3]))
                return 0;
            if ((c == 0xF0 && data[i + 1] < 0x90) || (c == 0xF4 && data[i + 1] > 0x8F))
                return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* 1 if the separator [m] occurs at data[i] within data [n]. */
static inline int separator_at(const uint8_t *data, int64_t i, int64_t n, const uint8_t *separator,
                               int32_t m)
{
    return i + m <= n && memcmp(data + i, separator, (size_t)m) == 0;
}

/* 1 if line [s, e) is a -DOCSTART- line, its stripped bounds [a, b) non-empty and
 * e2 its end without trailing "\r"s. */
static int is_docstart(const uint8_t *data, int64_t s, int64_t e2, int64_t a, int64_t b,
                       const uint8_t *separator, int32_t m)
{
    if (m == 0)
        return b - a >= DOCSTART_LENGTH && memcmp(data + a, DOCSTART, DOCSTART_LENGTH) == 0
               && (a + DOCSTART_LENGTH == b || is_space(data[a + DOCSTART_LENGTH]));
    return e2 - s >= DOCSTART_LENGTH && memcmp(data + s, DOCSTART, DOCSTART_LENGTH) == 0
           && (s + DOCSTART_LENGTH == e2 || separator_at(data, s + DOCSTART_LENGTH, e2, separator, m));
}

/* Write the fields of a token line to out, each followed by "\n"; their count, and in
 * *empty the first empty one (from 1), 0 if none.  [a, b) is the stripped line
 * (whitespace layout) or the line without its trailing "\r"s. */
static int32_t split_fields(const uint8_t *data, int64_t a, int64_t b, const uint8_t *separator,
                            int32_t m, uint8_t *out, int64_t *written, int32_t *empty)
{
    int32_t count = 0;
    int64_t w = *written;
    *empty = 0;
    int64_t start = a;
    if (m == 0) {
        int64_t i = a;
        while (i < b) {
            while (i < b && !is_space(data[i])) ++i;
            memcpy(out + w, data + start, (size_t)(i - start));
            w += i - start;
            out[w++] = '\n';
            ++count;
            while (i < b && is_space(data[i])) ++i;
            start = i;
        }
    } else {
        int64_t i = a;
        for (;;) {
            const uint8_t *hit = NULL;
            if (m == 1) {
                hit = memchr(data + i, separator[0], (size_t)(b - i));
            } else {
                for (int64_t j = i; j + m <= b; ++j)
                    if (separator_at(data, j, b, separator, m)) {
                        hit = data + j;
                        break;
                    }
            }
            const int64_t stop = hit != NULL ? hit - data : b;
            ++count;
            if (stop == start && *empty == 0)
                *empty = count;
            memcpy(out + w, data + start, (size_t)(stop - start));
            w += stop - start;
            out[w++] = '\n';
            if (hit == NULL)
                break;
            i = start = stop + m;
        }
    }
    *written = w;
    return count;
}

int fl_scan(const uint8_t *data, int64_t size, int32_t final, const uint8_t *separator,
            int32_t separator_length, int64_t *sentence_line, int64_t *sentence_tokens,
            int64_t *sentence_end, int64_t *docstart_start, int64_t *docstart_end,
            int64_t *docstart_before, uint8_t *fields, fl_scan_result *result)
{
    const int32_t m = separator_length;
    int32_t expected = result->num_fields;
    int64_t first_token_line = -1;
    int64_t sentences = 0, docstarts = 0, field_bytes = 0;
    int64_t consumed_lines = 0, consumed_bytes = 0;
    /* the open sentence: its first line (-1: none), tokens, first byte and field bytes */
    int64_t open_line = -1, open_tokens = 0, open_byte = 0, open_fields = 0;
    int64_t pending_line = -1;  /* the first bad token line of the open sentence */
    int32_t pending_field = 0, pending_count = 0;
    int status = FC_OK;
    int64_t line = 0, pos = 0;

#define CLOSE_SENTENCE()                                        \
    do {                                                        \
        if (open_line >= 0) {                                   \
            if (pending_line >= 0) {                            \
                status = FL_BAD_FIELDS;                         \
                goto done;                                      \
            }                                                   \
            sentence_line[sentences] = open_line;               \
            sentence_tokens[sentences] = open_tokens;           \
            sentence_end[sentences] = field_bytes;              \
            ++sentences;                                        \
            open_line = -1;                                     \
        }                                                       \
    } while (0)

    while (pos < size) {
        const uint8_t *newline = memchr(data + pos, '\n', (size_t)(size - pos));
        const int64_t s = pos, e = newline != NULL ? newline - data : size;
        pos = newline != NULL ? e + 1 : size;
        if (!valid_utf8(data + s, e - s)) {
            status = FL_BAD_UTF8;
            result->error_line = line;
            goto done;
        }
        int64_t a = s, b = e, e2 = e;
        while (a < b && is_space(data[a])) ++a;
        while (b > a && is_space(data[b - 1])) --b;
        while (e2 > s && data[e2 - 1] == '\r') --e2;
        if (a == b || is_docstart(data, s, e2, a, b, separator, m)) {
            CLOSE_SENTENCE();
            if (a != b) {
                docstart_start[docstarts] = s;
                docstart_end[docstarts] = e2;
                docstart_before[docstarts] = sentences;
                ++docstarts;
            }
            consumed_lines = line + 1;
            consumed_bytes = pos;
            ++line;
            continue;
        }
        if (open_line < 0) {
            open_line = line;
            open_tokens = 0;
            open_byte = s;
            open_fields = field_bytes;
        }
        int32_t empty;
        const int32_t count = m == 0 ? split_fields(data, a, b, separator, m, fields, &field_bytes, &empty)
                                     : split_fields(data, s, e2, separator, m, fields, &field_bytes, &empty);
        if (pending_line < 0 && (empty > 0 || (expected > 0 && count != expected))) {
            pending_line = line;
            pending_field = empty;
            pending_count = count;
        } else if (expected == 0 && pending_line < 0) {
            expected = count;
            first_token_line = line;
        }
        ++open_tokens;
        ++line;
    }
    if (open_line >= 0 && final) {
        CLOSE_SENTENCE();
        consumed_lines = line;
        consumed_bytes = size;
    } else if (open_line >= 0) {  /* left for the next call, with more data */
        field_bytes = open_fields;
        if (first_token_line >= open_line) {
            expected = 0;
            first_token_line = -1;
        }
        consumed_bytes = open_byte;
    } else {
        consumed_lines = line;
        consumed_bytes = size;
    }
done:
    result->open_line = status != FC_OK ? open_line : -1;
    if (status == FL_BAD_FIELDS) {
        result->error_line = pending_line;
        result->error_field = pending_field;
        result->error_count = pending_count;
    }
    result->num_fields = expected;
    result->first_token_line = first_token_line;
    result->lines = consumed_lines;
    result->bytes = consumed_bytes;
    result->sentences = sentences;
    result->docstarts = docstarts;
    result->field_bytes = field_bytes;
    return status;
#undef CLOSE_SENTENCE
}

/* Copy the field at *source (ending at the "\n" before end) to out, followed by `after`
 * [k]; FL_BAD_FIELD if it is empty, has no "\n" or holds a byte that may not be
 * written (see the header), FL_NO_ROOM if out has no room. */
static int copy_field(const uint8_t **source, const uint8_t *end, const uint8_t *separator, int32_t m,
                      const uint8_t *after, int32_t k, uint8_t **out, const uint8_t *out_end)
{
    const uint8_t *field = *source;
    const uint8_t *newline = memchr(field, '\n', (size_t)(end - field));
    if (newline == NULL || newline == field)
        return FL_BAD_FIELD;
    const int64_t n = newline - field;
    if (m == 1 && separator[0] == ' ') {
        for (int64_t i = 0; i < n; ++i)
            if (is_space(field[i]))
                return FL_BAD_FIELD;
    } else {
        if (memchr(field, '\r', (size_t)n) != NULL)
            return FL_BAD_FIELD;
        for (int64_t i = 0; i + m <= n; ++i)
            if (separator_at(field, i, n, separator, m))
                return FL_BAD_FIELD;
    }
    if (out_end - *out < n + k)
        return FL_NO_ROOM;
    memcpy(*out, field, (size_t)n);
    memcpy(*out + n, after, (size_t)k);
    *out += n + k;
    *source = newline + 1;
    return FC_OK;
}

/* Copy `count` -DOCSTART- lines at *source (before end), each with the padding and a blank line. */
static int copy_docstarts(int64_t count, const uint8_t **source, const uint8_t *end, const uint8_t *padding,
                          int32_t padding_length, uint8_t **out, const uint8_t *out_end)
{
    for (int64_t i = 0; i < count; ++i) {
        const uint8_t *newline = memchr(*source, '\n', (size_t)(end - *source));
        if (newline == NULL)
            return FL_BAD_FIELD;
        const int64_t n = newline - *source;
        if (out_end - *out < n + padding_length + 2)
            return FL_NO_ROOM;
        memcpy(*out, *source, (size_t)n);
        memcpy(*out + n, padding, (size_t)padding_length);
        (*out)[n + padding_length] = '\n';
        (*out)[n + padding_length + 1] = '\n';
        *out += n + padding_length + 2;
        *source = newline + 1;
    }
    return FC_OK;
}

/* 1 if the field at field (before end) is -DOCSTART- followed by "\n". */
static int docstart_field(const uint8_t *field, const uint8_t *end)
{
    return end - field > DOCSTART_LENGTH && memcmp(field, DOCSTART, DOCSTART_LENGTH) == 0
           && field[DOCSTART_LENGTH] == '\n';
}

int fl_format(int64_t num_sentences, const int64_t *lengths, int32_t num_row_fields,
              const uint8_t *rows, int64_t rows_size, int32_t num_columns, const uint8_t *columns,
              int64_t columns_size, int64_t *column_cursors, const uint8_t *docstarts,
              int64_t docstarts_size, const int64_t *docstarts_before, const uint8_t *padding,
              int32_t padding_length, const uint8_t *separator, int32_t separator_length,
              uint8_t *out, int64_t capacity, int64_t *written)
{
    static const uint8_t NEWLINE[] = "\n";
    const int32_t m = separator_length;
    const int32_t fields = num_row_fields + num_columns;
    uint8_t *o = out;
    const uint8_t *out_end = out + capacity;
    const uint8_t *row = rows, *rows_end = rows + rows_size;
    const uint8_t *docstart = docstarts, *docstarts_end = docstarts + docstarts_size;
    const uint8_t *columns_end = columns + columns_size;
    int status = FC_OK;
    for (int64_t b = 0; b <= num_sentences && status == FC_OK; ++b) {
        const int64_t before = docstarts_before[b] - (b > 0 ? docstarts_before[b - 1] : 0);
        status = copy_docstarts(before, &docstart, docstarts_end, padding, padding_length, &o, out_end);
        if (status != FC_OK || b == num_sentences)
            break;
        for (int64_t t = 0; t < lengths[b] && status == FC_OK; ++t) {
            for (int32_t f = 0; f < fields && status == FC_OK; ++f) {
                const uint8_t *after = f + 1 < fields ? separator : NEWLINE;
                const int32_t k = f + 1 < fields ? m : 1;
                if (f < num_row_fields) {
                    if (f == 0 && docstart_field(row, rows_end))
                        status = FL_BAD_FIELD;
                    else
                        status = copy_field(&row, rows_end, separator, m, after, k, &o, out_end);
                    continue;
                }
                const int32_t e = f - num_row_fields;
                if (column_cursors[e] < 0 || column_cursors[e] >= columns_size) {
                    status = FL_BAD_FIELD;
                    continue;
                }
                const uint8_t *field = columns + column_cursors[e];
                if (f == 0 && docstart_field(field, columns_end))
                    status = FL_BAD_FIELD;
                else
                    status = copy_field(&field, columns_end, separator, m, after, k, &o, out_end);
                column_cursors[e] = field - columns;
            }
        }
        if (status == FC_OK && o >= out_end)
            status = FL_NO_ROOM;
        if (status == FC_OK)
            *o++ = '\n';
    }
    *written = o - out;
    return status;
}
