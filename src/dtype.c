/* ==========================================================================================
   src/dtype.c: Data types                                                            >>dtype
   TensorFlow's DataType numbers. float16 and bfloat16 convert with round-to-nearest-even;
   the truncating bfloat16 conversion is the one TensorFlow uses to compress transfers.
   ========================================================================================== */
size_t df_dtype_size(df_dtype t) {
    switch (t) {
    case DF_FLOAT: case DF_INT32: case DF_UINT32: return 4;
    case DF_DOUBLE: case DF_INT64: case DF_UINT64: case DF_COMPLEX64: case DF_RESOURCE: return 8;
    case DF_VARIANT: return sizeof(void *);   /* a pointer to a reference-counted payload */
    case DF_UINT8: case DF_INT8: case DF_BOOL: return 1;
    case DF_INT16: case DF_UINT16: case DF_BFLOAT16: case DF_HALF: return 2;
    case DF_COMPLEX128: return 16;
    default: return 0;
    }
}

const char *df_dtype_name(df_dtype t) {
    switch (t) {
    case DF_FLOAT: return "float"; case DF_DOUBLE: return "double"; case DF_INT32: return "int32";
    case DF_UINT8: return "uint8"; case DF_INT16: return "int16"; case DF_INT8: return "int8";
    case DF_STRING: return "string"; case DF_COMPLEX64: return "complex64";
    case DF_INT64: return "int64"; case DF_BOOL: return "bool"; case DF_BFLOAT16: return "bfloat16";
    case DF_UINT16: return "uint16"; case DF_COMPLEX128: return "complex128";
    case DF_HALF: return "half"; case DF_UINT32: return "uint32"; case DF_UINT64: return "uint64";
    case DF_RESOURCE: return "resource"; case DF_VARIANT: return "variant";
    default: return "invalid";
    }
}

DF_PRIVATE df_dtype df__dtype_from_name(const char *s) {
    static const df_dtype all[] = {DF_FLOAT, DF_DOUBLE, DF_INT32, DF_UINT8, DF_INT16, DF_INT8,
        DF_STRING, DF_COMPLEX64, DF_INT64, DF_BOOL, DF_BFLOAT16, DF_UINT16, DF_COMPLEX128,
        DF_HALF, DF_UINT32, DF_UINT64, DF_RESOURCE, DF_VARIANT};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!strcmp(df_dtype_name(all[i]), s)) return all[i];
    if (!strcmp(s, "float16")) return DF_HALF;
    return (df_dtype)0;
}

/* A dtype a tensor can hold here (strings are not tensors in this runtime yet). Resource
   handles and variants (TensorLists, Optionals) are made only by kernels (StackV2,
   EmptyTensorList), never by users or attrs; the ops that may carry them say so one by one. */
DF_PRIVATE int df__dtype_valid(df_dtype t) { return df_dtype_size(t) != 0 && t != DF_RESOURCE && t != DF_VARIANT; }

static uint32_t df__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float df__bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t df_float_to_half(float f) {
    uint32_t x = df__f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return (uint16_t)(sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);        /* rounds to >= 65520: inf */
    if (absx < 0x38800000u) {                                          /* subnormal half or zero */
        if (absx < 0x33000000u) return (uint16_t)sign;                 /* below half the min subnormal */
        /* value = mant * 2^(e-150) and a half subnormal unit is 2^-24: q = mant >> (126 - e) */
        uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
        int s = 126 - (int)(absx >> 23);                               /* 14 .. 24 */
        uint32_t q = mant >> s, rem = mant & ((1u << s) - 1), halfway = 1u << (s - 1);
        if (rem > halfway || (rem == halfway && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t e = (absx >> 23) - 112;                                   /* rebias 127 -> 15 */
    uint32_t m = absx & 0x7fffffu;
    uint32_t h = (e << 10) | (m >> 13);
    uint32_t rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;              /* carry may bump exponent */
    return (uint16_t)(sign | h);
}

float df_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return df__bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (!m) return df__bits_f32(sign);
        float v = (float)m * (1.0f / 16777216.0f);                     /* m * 2^-24 */
        return sign ? -v : v;
    }
    return df__bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t df_float_to_bfloat16(float f) {
    uint32_t x = df__f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);   /* quiet NaN */
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

uint16_t df_float_to_bfloat16_trunc(float f) {
    uint32_t x = df__f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)(x >> 16);
}

float df_bfloat16_to_float(uint16_t b) { return df__bits_f32((uint32_t)b << 16); }
