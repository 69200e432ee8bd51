/* test_half.c - half and bfloat16 (src/kernels/half.c): TensorFlow 2.21's bit patterns for
   MatMul, elementwise ops, Sum/Mean (TensorFlow adds half values in half, in Eigen's order),
   Softmax and LogSoftmax on inputs made by formulas (tests/half/make_expected.py prints the
   tables), Cast between the 16-bit types and the others, 2-byte data movement, a small MLP's
   forward pass and gradients in half against TensorFlow's, and bad input. Public API only. */
#include "harness.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#define LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- TensorFlow 2.21's results (tests/half/make_expected.py) ---- */
static const uint16_t H_MATMUL[] = {0x40ac,0xbec0,0xbe60,0x3e98,0x34a0,0xbc08,0xb0c0,0x414c,0xbad0,0xbfb8,0xb460,0x37c0,0x3c00,0xb1c0,0x3c40,0xbb30,0xb3c0,0xc004,0xbaf0,0x4164};
static const uint16_t H_MATMUL_TB[] = {0x4748,0xc2a8,0xb580,0x3d20,0xc2a8,0x47ac,0xc140,0xbc90,0xb580,0xc140,0x449c,0xc150,0x3d20,0xbc90,0xc150,0x479c};
static const uint16_t H_ADD[] = {0xc400,0x3400,0xb400,0xba00,0xb000,0xb900,0xbc80,0x4240,0xbc00,0xbe00,0x4180,0xbd80,0xbf80,0x40c0,0x3f80,0xc080,0x4000,0x3e00,0x3c00,0xc240,0x3c80,0x3900,0xc300,0x3a00};
static const uint16_t H_MUL[] = {0x43e0,0xba00,0xb000,0xc100,0xbee0,0x2e00,0xbc60,0x40e0,0x8000,0x8000,0x3f00,0xb680,0x3a40,0x3a00,0x3980,0x3d00,0xb880,0x3880,0xbd40,0x3fe0,0x3000,0xb880,0x4200,0xb900};
static const uint16_t H_DIV[] = {0xc700,0xb400,0x3155,0x34b5,0xb800,0xb4cd,0x3100,0x3933,0xbc00,0x0000,0x371c,0xc055,0xb1b7,0x3200,0x4180,0xb627,0xb092,0x4200,0x38ab,0xb8ab,0x2788,0x368c,0xbccd,0xb000};
static const uint16_t H_EXP[] = {0x3011,0x3e98,0x3532,0x4436,0x3aa2,0x3139,0x403c,0x36ab,0x4568,0x3c42,0x32b5,0x4170,0x3848,0x46f1,0x3d78,0x344e,0x42fb,0x3980,0x3055,0x3f05,0x3588,0x447b,0x3b0f,0x3190,0x4082,0x371a,0x45c1,0x3c88,0x3324,0x41ca,0x388f,0x4764,0x3dd2,0x3496,0x436e,0x39da,0x309c,0x3f79,0x35e3,0x44c5,0x3b84,0x31eb,0x40cc,0x378f,0x4620,0x3cd3,0x339a,0x4229,0x38da,0x47de,0x3e32,0x34e1,0x43e9,0x3a3b,0x30e8,0x3ff4,0x3644,0x4514,0x3c00,0x324d,0x411b,0x3806,0x4685,0x3d23,0x340c,0x428f,0x392a,0x3011,0x3e98,0x3532,0x4436,0x3aa2,0x3139,0x403c,0x36ab,0x4568,0x3c42,0x32b5,0x4170,0x3848,0x46f1,0x3d78,0x344e,0x42fb,0x3980,0x3055,0x3f05,0x3588,0x447b,0x3b0f,0x3190,0x4082,0x371a,0x45c1,0x3c88,0x3324,0x41ca,0x388f,0x4764,0x3dd2,0x3496,0x436e,0x39da,0x309c,0x3f79,0x35e3,0x44c5,0x3b84,0x31eb,0x40cc,0x378f,0x4620,0x3cd3,0x339a,0x4229,0x38da,0x47de,0x3e32,0x34e1,0x43e9};
static const uint16_t H_TANH[] = {0xbbbf,0x3765,0xba79,0x3b25,0xb1ee,0xbb96,0x3915,0xb9a2,0x3b78,0x2bfd,0xbb54,0x3a18,0xb870,0x3bad,0x34d8,0xbaeb,0x3ac9,0xb5bc,0xbbb6,0x3814,0xba4b,0x3b3e,0xaff5,0xbb88,0x395e,0xb95e,0x3b88,0x2ff5,0xbb3e,0x3a4b,0xb814,0x3bb6,0x35bc,0xbac9,0x3aeb,0xb4d8,0xbbad,0x3870,0xba18,0x3b54,0xabfd,0xbb78,0x39a2,0xb915,0x3b96,0x31ee,0xbb25,0x3a79,0xb765,0x3bbf,0x3696,0xbaa3,0x3b0a,0xb3d6,0xbba2,0x38c5,0xb9df,0x3b67,0x0000,0xbb67,0x39df,0xb8c5,0x3ba2,0x33d6,0xbb0a,0x3aa3,0xb696,0xbbbf,0x3765,0xba79,0x3b25,0xb1ee,0xbb96,0x3915,0xb9a2,0x3b78,0x2bfd,0xbb54,0x3a18,0xb870,0x3bad,0x34d8,0xbaeb,0x3ac9,0xb5bc,0xbbb6,0x3814,0xba4b,0x3b3e,0xaff5,0xbb88,0x395e,0xb95e,0x3b88,0x2ff5,0xbb3e,0x3a4b,0xb814,0x3bb6,0x35bc,0xbac9,0x3aeb,0xb4d8,0xbbad,0x3870,0xba18,0x3b54,0xabfd,0xbb78,0x39a2,0xb915,0x3b96,0x31ee,0xbb25,0x3a79,0xb765,0x3bbf,0x3696,0xbaa3,0x3b0a};
static const uint16_t H_SIGMOID[] = {0x2f37,0x38fb,0x33d9,0x3a77,0x3741,0x307e,0x396f,0x34b5,0x3ac0,0x3820,0x318b,0x39d9,0x3594,0x3afe,0x389f,0x32c8,0x3a37,0x3685,0x2fa1,0x3919,0x341c,0x3a8a,0x377f,0x30bd,0x398b,0x34ec,0x3ad1,0x3840,0x31d7,0x39f2,0x35ce,0x3b0c,0x38be,0x3320,0x3a4e,0x36c2,0x3007,0x3936,0x344d,0x3a9d,0x37c0,0x30ff,0x39a5,0x3522,0x3ae1,0x385f,0x3225,0x3a0b,0x360a,0x3b19,0x38dc,0x337b,0x3a63,0x3701,0x3041,0x3953,0x3481,0x3aaf,0x3800,0x3143,0x39c0,0x355b,0x3af0,0x387f,0x3276,0x3a21,0x3647,0x2f37,0x38fb,0x33d9,0x3a77,0x3741,0x307e,0x396f,0x34b5,0x3ac0,0x3820,0x318b,0x39d9,0x3594,0x3afe,0x389f,0x32c8,0x3a37,0x3685,0x2fa1,0x3919,0x341c,0x3a8a,0x377f,0x30bd,0x398b,0x34ec,0x3ad1,0x3840,0x31d7,0x39f2,0x35ce,0x3b0c,0x38be,0x3320,0x3a4e,0x36c2,0x3007,0x3936,0x344d,0x3a9d,0x37c0,0x30ff,0x39a5,0x3522,0x3ae1,0x385f,0x3225,0x3a0b,0x360a,0x3b19,0x38dc,0x337b,0x3a63};
static const uint16_t H_RSQRT[] = {0x4000,0x389e,0x3a88,0x37c3,0x38d3,0x3b28,0x3800,0x390f,0x3c00,0x3822,0x3955,0x3c9e,0x3847,0x39a8,0x3da8,0x3870,0x3a0c,0x4000,0x389e,0x3a88,0x37c3,0x38d3,0x3b28,0x3800};
static const uint16_t H_ERF[] = {0xbbf9,0x382a,0xbb1b,0x3baa,0xb2b1,0xbbeb,0x39b0,0xba46,0x3bdd,0x2c82,0xbbc8,0x3abe,0xb8fc,0x3bf3,0x3577,0xbb7e,0x3b62,0xb677,0xbbf6,0x3897,0xbaf0,0x3bbb,0xb07d,0xbbe5,0x39ff,0xb9ff,0x3be5,0x307d,0xbbbb,0x3af0,0xb897,0x3bf6,0x3677,0xbb62,0x3b7e,0xb577,0xbbf3,0x38fc,0xbabe,0x3bc8,0xac82,0xbbdd,0x3a46,0xb9b0,0x3beb,0x32b1,0xbbaa,0x3b1b,0xb82a,0x3bf9,0x376c,0xbb41,0x3b96,0xb46c,0xbbf0,0x395a,0xba85,0x3bd4,0x0000,0xbbd4,0x3a85,0xb95a,0x3bf0,0x346c,0xbb96,0x3b41,0xb76c,0xbbf9,0x382a,0xbb1b,0x3baa,0xb2b1,0xbbeb,0x39b0,0xba46,0x3bdd,0x2c82,0xbbc8,0x3abe,0xb8fc,0x3bf3,0x3577,0xbb7e,0x3b62,0xb677,0xbbf6,0x3897,0xbaf0,0x3bbb,0xb07d,0xbbe5,0x39ff,0xb9ff,0x3be5,0x307d,0xbbbb,0x3af0,0xb897,0x3bf6,0x3677,0xbb62,0x3b7e,0xb577,0xbbf3,0x38fc,0xbabe,0x3bc8,0xac82,0xbbdd,0x3a46,0xb9b0,0x3beb,0x32b1,0xbbaa,0x3b1b,0xb82a,0x3bf9,0x376c,0xbb41,0x3b96};
static const uint16_t H_SUM1[] = {0xbe80,0xbcc0,0x42e0};
static const uint16_t H_MEAN1[] = {0xa933,0xa79a,0x2d80};
static const uint16_t H_SUMLONG[] = {0x4770,0xb480};
static const uint16_t H_MEANLONG[] = {0x1c7b,0x896c};
static const uint16_t H_SUM0[] = {0xbd80,0xb000,0x3c80,0xb800,0x3a00,0xbb00,0x3600,0xbd00,0x0000,0x3d00,0xb600,0x3b00,0xba00,0x3800,0xbc80,0x3000};
static const uint16_t H_SUM0N[] = {0xbc00,0xbf00,0x3a00};
static const uint16_t H_MAX1[] = {0x4000,0x4020,0x4020};
static const uint16_t H_SOFTMAX[] = {0x1702,0x25ae,0x1c79,0x2b40,0x21b6,0x1880,0x274c,0x1dbf,0x2ca8,0x2355,0x19c7,0x28af,0x1f60,0x2dfa,0x24b5,0x1b6b,0x2a03,0x20bc,0x1775,0x260c,0x1cc3,0x2bb8,0x2215,0x18ca,0x27c3,0x1e1d,0x2cf5,0x23ce,0x1a26,0x28fc,0x1fd9,0x2e5d,0x2503,0x1be6,0x2a67,0x210a,0x17f1,0x2670,0x1d11,0x2c1c,0x2290,0x192b,0x2830,0x1e99,0x2d59,0x2436,0x1aa3,0x2961,0x203c,0x2ede,0x2569,0x1c43,0x2ae8,0x2170,0x1849,0x26f3,0x1d78,0x2c6f,0x22fb,0x1981,0x2876,0x1f05,0x2db2,0x247c,0x1b10,0x29b9,0x2083,0x171a,0x25c2,0x1c89,0x2b5a,0x21ca,0x188f,0x2764,0x1dd3,0x2cb9,0x2370,0x19db,0x28bf,0x1f7a,0x2d52,0x2432,0x1a9a,0x295b,0x2038,0x16a5,0x2562,0x1c3e,0x2ae0,0x216a,0x1844,0x26ea,0x1d72,0x2c69,0x22f3,0x197a,0x2870,0x1efe,0x2dab,0x2476,0x1b08,0x29b3,0x207d,0x1711,0x25bb,0x1c84,0x2b51,0x21c3,0x188a,0x275b,0x1dcc,0x2cb2,0x2366,0x19d4,0x28b9,0x1f70,0x2e08,0x24c0,0x1b7c,0x2a11};
static const uint16_t H_LOGSOFTMAX[] = {0xc65f,0xc39e,0xc56f,0xc1be,0xc47f,0xc61f,0xc31e,0xc52f,0xc13e,0xc43f,0xc5df,0xc29e,0xc4ef,0xc0be,0xc3fe,0xc59f,0xc21e,0xc4af,0xc64f,0xc37e,0xc55f,0xc19e,0xc46f,0xc60f,0xc2fe,0xc51f,0xc11e,0xc42f,0xc5cf,0xc27e,0xc4df,0xc09e,0xc3de,0xc58f,0xc1fe,0xc49f,0xc63f,0xc35e,0xc54f,0xc17e,0xc45c,0xc5fc,0xc2d7,0xc50c,0xc0f7,0xc41c,0xc5bc,0xc257,0xc4cc,0xc077,0xc3b7,0xc57c,0xc1d7,0xc48c,0xc62c,0xc337,0xc53c,0xc157,0xc44c,0xc5ec,0xc2b7,0xc4fc,0xc0d7,0xc40c,0xc5ac,0xc237,0xc4bc,0xc65c,0xc397,0xc56c,0xc1b7,0xc47c,0xc61c,0xc317,0xc52c,0xc137,0xc43c,0xc5dc,0xc297,0xc4ec,0xc0f9,0xc41c,0xc5bc,0xc259,0xc4cc,0xc66c,0xc3b9,0xc57c,0xc1d9,0xc48c,0xc62c,0xc339,0xc53c,0xc159,0xc44c,0xc5ec,0xc2b9,0xc4fc,0xc0d9,0xc40c,0xc5ac,0xc239,0xc4bc,0xc65c,0xc399,0xc56c,0xc1b9,0xc47c,0xc61c,0xc319,0xc52c,0xc139,0xc43c,0xc5dc,0xc299,0xc4ec,0xc0b9,0xc3f9,0xc59c,0xc219};
static const uint16_t B_MATMUL[] = {0x4016,0xbfd8,0xbfcc,0x3fd3,0x3e94,0xbf81,0xbe18,0x402a,0xbf5a,0xbff7,0xbe8c,0x3ef8,0x3f80,0xbe38,0x3f88,0xbf66,0xbe78,0xc000,0xbf5e,0x402c};
static const uint16_t B_MATMUL_TB[] = {0x40e9,0xc055,0xbeb0,0x3fa4,0xc055,0x40f6,0xc028,0xbf92,0xbeb0,0xc028,0x4094,0xc02a,0x3fa4,0xbf92,0xc02a,0x40f4};
static const uint16_t B_ADD[] = {0xc080,0x3e80,0xbe80,0xbf40,0xbe00,0xbf20,0xbf90,0x4048,0xbf80,0xbfc0,0x4030,0xbfb0,0xbff0,0x4018,0x3ff0,0xc010,0x4000,0x3fc0,0x3f80,0xc048,0x3f90,0x3f20,0xc060,0x3f40};
static const uint16_t B_MUL[] = {0x407c,0xbf40,0xbe00,0xc020,0xbfdc,0x3dc0,0xbf8c,0x401c,0x8000,0x8000,0x3fe0,0xbed0,0x3f48,0x3f40,0x3f30,0x3fa0,0xbf10,0x3f10,0xbfa8,0x3ffc,0x3e00,0xbf10,0x4040,0xbf20};
static const uint16_t B_DIV[] = {0xc0e0,0xbe80,0x3e2b,0x3e97,0xbf00,0xbe9a,0x3e20,0x3f26,0xbf80,0x0000,0x3ee4,0xc00b,0xbe37,0x3e40,0x4030,0xbec5,0xbe12,0x4040,0x3f15,0xbf15,0x3cf1,0x3ed1,0xbf9a,0xbe00};
static const uint16_t B_EXP[] = {0x3e02,0x3fd3,0x3ea6,0x4087,0x3f54,0x3e27,0x4007,0x3ed5,0x40ad,0x3f88,0x3e57,0x402e,0x3f09,0x40de,0x3faf,0x3e8a,0x405f,0x3f30,0x3e0b,0x3fe1,0x3eb1,0x408f,0x3f62,0x3e32,0x4010,0x3ee3,0x40b8,0x3f91,0x3e64,0x4039,0x3f12,0x40ec,0x3fba,0x3e93,0x406e,0x3f3b,0x3e14,0x3fef,0x3ebc,0x4099,0x3f70,0x3e3d,0x401a,0x3ef2,0x40c4,0x3f9a,0x3e73,0x4045,0x3f1b,0x40fc,0x3fc6,0x3e9c,0x407d,0x3f47,0x3e1d,0x3fff,0x3ec9,0x40a3,0x3f80,0x3e4a,0x4023,0x3f01,0x40d1,0x3fa4,0x3e81,0x4052,0x3f25,0x3e02,0x3fd3,0x3ea6,0x4087,0x3f54,0x3e27,0x4007,0x3ed5,0x40ad,0x3f88,0x3e57,0x402e,0x3f09,0x40de,0x3faf,0x3e8a,0x405f,0x3f30,0x3e0b,0x3fe1,0x3eb1,0x408f,0x3f62,0x3e32,0x4010,0x3ee3,0x40b8,0x3f91,0x3e64,0x4039,0x3f12,0x40ec,0x3fba,0x3e93,0x406e,0x3f3b,0x3e14,0x3fef,0x3ebc,0x4099,0x3f70,0x3e3d,0x401a,0x3ef2,0x40c4,0x3f9a,0x3e73,0x4045,0x3f1b,0x40fc,0x3fc6,0x3e9c,0x407d};
static const uint16_t B_TANH[] = {0xbf78,0x3eed,0xbf4f,0x3f65,0xbe3e,0xbf73,0x3f23,0xbf34,0x3f6f,0x3d80,0xbf6a,0x3f43,0xbf0e,0x3f76,0x3e9b,0xbf5d,0x3f59,0xbeb7,0xbf77,0x3f03,0xbf49,0x3f68,0xbdff,0xbf71,0x3f2c,0xbf2c,0x3f71,0x3dff,0xbf68,0x3f49,0xbf03,0x3f77,0x3eb7,0xbf59,0x3f5d,0xbe9b,0xbf76,0x3f0e,0xbf43,0x3f6a,0xbd80,0xbf6f,0x3f34,0xbf23,0x3f73,0x3e3e,0xbf65,0x3f4f,0xbeed,0x3f78,0x3ed3,0xbf54,0x3f61,0xbe7b,0xbf74,0x3f19,0xbf3c,0x3f6d,0x0000,0xbf6d,0x3f3c,0xbf19,0x3f74,0x3e7b,0xbf61,0x3f54,0xbed3,0xbf78,0x3eed,0xbf4f,0x3f65,0xbe3e,0xbf73,0x3f23,0xbf34,0x3f6f,0x3d80,0xbf6a,0x3f43,0xbf0e,0x3f76,0x3e9b,0xbf5d,0x3f59,0xbeb7,0xbf77,0x3f03,0xbf49,0x3f68,0xbdff,0xbf71,0x3f2c,0xbf2c,0x3f71,0x3dff,0xbf68,0x3f49,0xbf03,0x3f77,0x3eb7,0xbf59,0x3f5d,0xbe9b,0xbf76,0x3f0e,0xbf43,0x3f6a,0xbd80,0xbf6f,0x3f34,0xbf23,0x3f73,0x3e3e,0xbf65,0x3f4f,0xbeed,0x3f78,0x3ed3,0xbf54,0x3f61};
static const uint16_t B_SIGMOID[] = {0x3de7,0x3f1f,0x3e7a,0x3f4f,0x3ee8,0x3e0f,0x3f2e,0x3e97,0x3f58,0x3f04,0x3e32,0x3f3b,0x3eb3,0x3f60,0x3f13,0x3e5a,0x3f46,0x3ed1,0x3df5,0x3f24,0x3e84,0x3f51,0x3ef0,0x3e18,0x3f31,0x3e9d,0x3f5a,0x3f08,0x3e3b,0x3f3e,0x3eba,0x3f61,0x3f18,0x3e64,0x3f4a,0x3ed8,0x3e02,0x3f26,0x3e8a,0x3f54,0x3ef8,0x3e1f,0x3f35,0x3ea5,0x3f5c,0x3f0c,0x3e45,0x3f42,0x3ec1,0x3f63,0x3f1b,0x3e6f,0x3f4d,0x3edf,0x3e08,0x3f2a,0x3e91,0x3f56,0x3f00,0x3e29,0x3f38,0x3eac,0x3f5e,0x3f10,0x3e4e,0x3f44,0x3ec9,0x3de7,0x3f1f,0x3e7a,0x3f4f,0x3ee8,0x3e0f,0x3f2e,0x3e97,0x3f58,0x3f04,0x3e32,0x3f3b,0x3eb3,0x3f60,0x3f13,0x3e5a,0x3f46,0x3ed1,0x3df5,0x3f24,0x3e84,0x3f51,0x3ef0,0x3e18,0x3f31,0x3e9d,0x3f5a,0x3f08,0x3e3b,0x3f3e,0x3eba,0x3f61,0x3f18,0x3e64,0x3f4a,0x3ed8,0x3e02,0x3f26,0x3e8a,0x3f54,0x3ef8,0x3e1f,0x3f35,0x3ea5,0x3f5c,0x3f0c,0x3e45,0x3f42,0x3ec1,0x3f63,0x3f1b,0x3e6f,0x3f4d};
static const uint16_t B_RSQRT[] = {0x4000,0x3f14,0x3f51,0x3ef8,0x3f1a,0x3f65,0x3f00,0x3f22,0x3f80,0x3f04,0x3f2b,0x3f94,0x3f09,0x3f35,0x3fb5,0x3f0e,0x3f42,0x4000,0x3f14,0x3f51,0x3ef8,0x3f1a,0x3f65,0x3f00};
static const uint16_t B_ERF[] = {0xbf7f,0x3f05,0xbf63,0x3f75,0xbe56,0xbf7d,0x3f36,0xbf49,0x3f7c,0x3d90,0xbf79,0x3f58,0xbf20,0x3f7e,0x3eaf,0xbf70,0x3f6c,0xbecf,0xbf7f,0x3f13,0xbf5e,0x3f77,0xbe10,0xbf7d,0x3f40,0xbf40,0x3f7d,0x3e10,0xbf77,0x3f5e,0xbf13,0x3f7f,0x3ecf,0xbf6c,0x3f70,0xbeaf,0xbf7e,0x3f20,0xbf58,0x3f79,0xbd90,0xbf7c,0x3f49,0xbf36,0x3f7d,0x3e56,0xbf75,0x3f63,0xbf05,0x3f7f,0x3eee,0xbf68,0x3f73,0xbe8d,0xbf7e,0x3f2b,0xbf51,0x3f7a,0x0000,0xbf7a,0x3f51,0xbf2b,0x3f7e,0x3e8d,0xbf73,0x3f68,0xbeee,0xbf7f,0x3f05,0xbf63,0x3f75,0xbe56,0xbf7d,0x3f36,0xbf49,0x3f7c,0x3d90,0xbf79,0x3f58,0xbf20,0x3f7e,0x3eaf,0xbf70,0x3f6c,0xbecf,0xbf7f,0x3f13,0xbf5e,0x3f77,0xbe10,0xbf7d,0x3f40,0xbf40,0x3f7d,0x3e10,0xbf77,0x3f5e,0xbf13,0x3f7f,0x3ecf,0xbf6c,0x3f70,0xbeaf,0xbf7e,0x3f20,0xbf58,0x3f79,0xbd90,0xbf7c,0x3f49,0xbf36,0x3f7d,0x3e56,0xbf75,0x3f63,0xbf05,0x3f7f,0x3eee,0xbf68,0x3f73};
static const uint16_t B_SUM1[] = {0xbfd0,0xbf98,0x405c};
static const uint16_t B_MEAN1[] = {0xbd26,0xbcf3,0x3db0};
static const uint16_t B_SUMLONG[] = {0x40ee,0xbe90};
static const uint16_t B_MEANLONG[] = {0x3b8f,0xb92d};
static const uint16_t B_SUM0[] = {0xbfb0,0xbe00,0x3f90,0xbf00,0x3f40,0xbf60,0x3ec0,0xbfa0,0x0000,0x3fa0,0xbec0,0x3f60,0xbf40,0x3f00,0xbf90,0x3e00};
static const uint16_t B_SUM0N[] = {0xbf80,0xbfe0,0x3f40};
static const uint16_t B_MAX1[] = {0x4000,0x4004,0x4004};
static const uint16_t B_SOFTMAX[] = {0x3ae0,0x3cb6,0x3b8f,0x3d68,0x3c37,0x3b10,0x3ce9,0x3bb8,0x3d95,0x3c6b,0x3b39,0x3d16,0x3bec,0x3dbf,0x3c97,0x3b6d,0x3d40,0x3c18,0x3aef,0x3cc2,0x3b98,0x3d77,0x3c43,0x3b19,0x3cf8,0x3bc4,0x3d9f,0x3c7a,0x3b45,0x3d20,0x3bfb,0x3dcc,0x3ca0,0x3b7d,0x3d4d,0x3c21,0x3afe,0x3cce,0x3ba2,0x3d84,0x3c52,0x3b25,0x3d06,0x3bd3,0x3dab,0x3c87,0x3b54,0x3d2c,0x3c08,0x3ddc,0x3cad,0x3b88,0x3d5d,0x3c2e,0x3b09,0x3cde,0x3baf,0x3d8e,0x3c5f,0x3b30,0x3d0f,0x3be1,0x3db6,0x3c8f,0x3b62,0x3d37,0x3c10,0x3ae3,0x3cb8,0x3b91,0x3d6b,0x3c39,0x3b12,0x3ced,0x3bba,0x3d97,0x3c6e,0x3b3b,0x3d18,0x3bef,0x3daa,0x3c86,0x3b53,0x3d2b,0x3c07,0x3ad5,0x3cac,0x3b88,0x3d5c,0x3c2d,0x3b08,0x3cdd,0x3bae,0x3d8d,0x3c5e,0x3b2f,0x3d0e,0x3be0,0x3db5,0x3c8f,0x3b61,0x3d36,0x3c10,0x3ae2,0x3cb7,0x3b90,0x3d6a,0x3c38,0x3b11,0x3ceb,0x3bb9,0x3d96,0x3c6d,0x3b3b,0x3d17,0x3bee,0x3dc1,0x3c98,0x3b6f,0x3d42};
static const uint16_t B_LOGSOFTMAX[] = {0xc0cc,0xc074,0xc0ae,0xc038,0xc090,0xc0c4,0xc064,0xc0a6,0xc028,0xc088,0xc0bc,0xc054,0xc09e,0xc018,0xc080,0xc0b4,0xc044,0xc096,0xc0ca,0xc070,0xc0ac,0xc034,0xc08e,0xc0c2,0xc060,0xc0a4,0xc024,0xc086,0xc0ba,0xc050,0xc09c,0xc014,0xc07c,0xc0b2,0xc040,0xc094,0xc0c8,0xc06c,0xc0aa,0xc030,0xc08c,0xc0c0,0xc05b,0xc0a2,0xc01f,0xc084,0xc0b8,0xc04b,0xc09a,0xc00f,0xc077,0xc0b0,0xc03b,0xc092,0xc0c6,0xc067,0xc0a8,0xc02b,0xc08a,0xc0be,0xc057,0xc0a0,0xc01b,0xc082,0xc0b6,0xc047,0xc098,0xc0cc,0xc073,0xc0ae,0xc037,0xc090,0xc0c4,0xc063,0xc0a6,0xc027,0xc088,0xc0bc,0xc053,0xc09e,0xc01f,0xc084,0xc0b8,0xc04b,0xc09a,0xc0ce,0xc077,0xc0b0,0xc03b,0xc092,0xc0c6,0xc067,0xc0a8,0xc02b,0xc08a,0xc0be,0xc057,0xc0a0,0xc01b,0xc082,0xc0b6,0xc047,0xc098,0xc0cc,0xc073,0xc0ae,0xc037,0xc090,0xc0c4,0xc063,0xc0a6,0xc027,0xc088,0xc0bc,0xc053,0xc09e,0xc017,0xc07f,0xc0b4,0xc043};

/* the inputs: element i of input `name` is ((i * mul) % mod - off) / div, as in the script */
static const struct { char name; int64_t dims[2]; int mul, mod, off; float div; } INPUTS[] = {
    {'A', {4, 6}, 37, 29, 14, 8}, {'B', {6, 5}, 53, 31, 15, 16}, {'X', {3, 40}, 41, 67, 33, 16},
    {'L', {2, 1700}, 97, 101, 50, 32}, {'C', {40, 16}, 29, 23, 11, 8}, {'S', {20, 3}, 7, 13, 6, 4},
    {'D', {4, 6}, 13, 19, 9, 4}, {'E', {4, 6}, 11, 17, -1, 4},
};
static uint16_t to16(df_dtype t, float v) { return t == DF_HALF ? df_float_to_half(v) : df_float_to_bfloat16(v); }
static float from16(df_dtype t, uint16_t b) { return t == DF_HALF ? df_half_to_float(b) : df_bfloat16_to_float(b); }
static df_tensor *make_input(char name, df_dtype t) {
    for (int k = 0; k < LEN(INPUTS); k++) {
        if (INPUTS[k].name != name) continue;
        df_status st;
        df_tensor *x = df_tensor_new(t, 2, INPUTS[k].dims, &st);
        if (!x) return NULL;
        uint16_t *p = (uint16_t *)df_tensor_data(x);
        for (int64_t i = 0; i < df_tensor_num_elements(x); i++)
            p[i] = to16(t, (float)((i * INPUTS[k].mul) % INPUTS[k].mod - INPUTS[k].off) / INPUTS[k].div);
        return x;
    }
    return NULL;
}
static df_output axis_const(df_graph *g, int32_t axis) { return df_scalar_i32(g, axis); }
static df_output op1(df_graph *g, const char *op, df_output x, df_dtype t) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, x);
    df_op_set_attr_type(b, "T", t);
    return (df_output){df_op_finish(b), 0};
}
static df_output reduce(df_graph *g, const char *op, df_output x, int axis, df_dtype t) {
    df_op_builder *b = df_op_new(g, op, NULL);
    df_op_add_input(b, x);
    df_op_add_input(b, axis_const(g, axis));
    df_op_set_attr_type(b, "T", t);
    return (df_output){df_op_finish(b), 0};
}
static const struct { const char *name, *ins; const uint16_t *h, *bf; int nh, nb; } CASES[] = {
#define C(n, ins, N) {n, ins, H_##N, B_##N, LEN(H_##N), LEN(B_##N)}
    C("matmul", "AB", MATMUL), C("matmul_tb", "AA", MATMUL_TB), C("add", "AD", ADD), C("mul", "AD", MUL),
    C("div", "AE", DIV), C("exp", "X", EXP), C("tanh", "X", TANH), C("sigmoid", "X", SIGMOID), C("rsqrt", "E", RSQRT),
    C("erf", "X", ERF), C("sum1", "X", SUM1), C("mean1", "X", MEAN1), C("sumlong", "L", SUMLONG),
    C("meanlong", "L", MEANLONG), C("sum0", "C", SUM0), C("sum0n", "S", SUM0N), C("max1", "X", MAX1),
    C("softmax", "X", SOFTMAX), C("logsoftmax", "X", LOGSOFTMAX),
#undef C
};
static df_output build_case(df_graph *g, const char *n, df_output a, df_output b, df_dtype t) {
    if (!strcmp(n, "matmul")) return df_matmul(g, a, b, 0, 0);
    if (!strcmp(n, "matmul_tb")) return df_matmul(g, a, b, 0, 1);
    if (!strcmp(n, "add")) return df_add(g, a, b);
    if (!strcmp(n, "mul")) return df_mul(g, a, b);
    if (!strcmp(n, "div")) return df_div(g, a, b);
    if (!strcmp(n, "exp")) return df_exp(g, a);
    if (!strcmp(n, "tanh")) return df_tanh(g, a);
    if (!strcmp(n, "sigmoid")) return df_sigmoid(g, a);
    if (!strcmp(n, "rsqrt")) return op1(g, "Rsqrt", a, t);
    if (!strcmp(n, "erf")) return op1(g, "Erf", a, t);
    if (!strcmp(n, "sum1") || !strcmp(n, "sumlong")) return reduce(g, "Sum", a, 1, t);
    if (!strcmp(n, "mean1") || !strcmp(n, "meanlong")) return reduce(g, "Mean", a, 1, t);
    if (!strcmp(n, "sum0") || !strcmp(n, "sum0n")) return reduce(g, "Sum", a, 0, t);
    if (!strcmp(n, "max1")) return reduce(g, "Max", a, 1, t);
    if (!strcmp(n, "softmax")) return df_softmax(g, a);
    return op1(g, "LogSoftmax", a, t);
}
/* Runs case k on dtype t; returns the number of elements whose bits differ from TensorFlow's. */
static int run_case(int k, df_dtype t, char *why, size_t why_size) {
    df_status st;
    df_graph *g = df_graph_new();
    const char *ins = CASES[k].ins;
    df_tensor *xa = make_input(ins[0], t), *xb = ins[1] ? make_input(ins[1], t) : NULL;
    df_output pa = df_placeholder(g, "a", t, -1, NULL), pb = ins[1] ? df_placeholder(g, "b", t, -1, NULL) : pa;
    df_output y = build_case(g, CASES[k].name, pa, pb, t);
    df_output feeds[2] = {pa, pb};
    df_tensor *fv[2] = {xa, xb}, *out = NULL;
    df_session *s = df_session_new(g, NULL, &st);
    int bad = -1;
    if (s) df_session_run(s, feeds, fv, ins[1] ? 2 : 1, &y, &out, 1, NULL, 0, &st);
    const uint16_t *want = t == DF_HALF ? CASES[k].h : CASES[k].bf;
    int n = t == DF_HALF ? CASES[k].nh : CASES[k].nb;
    if (!s || st.code != DF_OK) snprintf(why, why_size, "%s: %s", CASES[k].name, st.message);
    else if (df_tensor_dtype(out) != t || df_tensor_num_elements(out) != n)
        snprintf(why, why_size, "%s: %s of %lld elements", CASES[k].name, df_dtype_name(df_tensor_dtype(out)),
                 (long long)df_tensor_num_elements(out));
    else {
        const uint16_t *got = (const uint16_t *)df_tensor_data(out);
        bad = 0;
        for (int i = 0; i < n; i++)
            if (got[i] != want[i]) {
                if (!bad++) snprintf(why, why_size, "%s element %d: %#06x (%.9g), TensorFlow %#06x (%.9g)", CASES[k].name, i,
                                     got[i], from16(t, got[i]), want[i], from16(t, want[i]));
            }
    }
    df_tensor_release(out);
    df_tensor_release(xa);
    df_tensor_release(xb);
    df_session_free(s);
    df_graph_free(g);
    return bad;
}

DF_TEST(half_ops_match_tensorflow_bit_for_bit) {
    for (int k = 0; k < LEN(CASES); k++) {
        char why[256] = "";
        int bad = run_case(k, DF_HALF, why, sizeof why);
        CHECK_MSG(bad == 0, "half %s (%d differ)", why, bad);
    }
}
DF_TEST(bfloat16_ops_match_tensorflow_bit_for_bit) {
    for (int k = 0; k < LEN(CASES); k++) {
        char why[256] = "";
        int bad = run_case(k, DF_BFLOAT16, why, sizeof why);
        CHECK_MSG(bad == 0, "bfloat16 %s (%d differ)", why, bad);
    }
}

/* ---- a two-layer MLP in half and bfloat16 (tests/half/make_mlp.py) ---- */
static const float MLP_H_Y[] = {-0.60400390625, 0.424560546875, -0.69189453125, 0.93701171875, 0.08184814453125, -0.9140625, -0.19287109375, 0.0, 0.19287109375, 0.87353515625, 0.08184814453125, -0.93701171875};
static const float MLP_H_LOSS[] = {0.372314453125};
static const float MLP_H_GW1[] = {-0.140869140625, -0.0019683837890625, 0.0109405517578125, -0.003173828125, -0.030853271484375, 0.0082244873046875, 0.07080078125, 0.0252685546875, -0.0328369140625, 0.061004638671875, 0.03485107421875, -0.0246734619140625, -0.07635498046875, 0.00970458984375, 0.04376220703125, 0.0169219970703125, -0.002689361572265625, 0.03289794921875, 0.1353759765625, -0.059234619140625, 0.0, -0.0098724365234375, -0.0254364013671875, 0.0, 0.04931640625, 0.0213775634765625, -0.04376220703125, -0.0733642578125, 0.0254669189453125, -0.03289794921875};
static const float MLP_H_GB1[] = {0.0860595703125, 0.01556396484375, 0.04376220703125, 0.02679443359375, 0.03753662109375, 0.03289794921875};
static const float MLP_H_GW2[] = {-0.06536865234375, 0.0704345703125, -0.07427978515625, -0.0127105712890625, 0.039459228515625, -0.0509033203125, 0.054901123046875, 0.0215911865234375, -0.0303802490234375, 0.01523590087890625, 0.0156707763671875, -0.01416015625, -0.0279388427734375, 0.06097412109375, -0.075927734375, 0.0290679931640625, 0.0114288330078125, -0.016082763671875};
static const float MLP_H_GB2[] = {-0.0413818359375, 0.0850830078125, -0.07330322265625};
static const float MLP_B_Y[] = {-0.60546875, 0.423828125, -0.69140625, 0.9375, 0.08203125, -0.9140625, -0.1923828125, 0.0, 0.1923828125, 0.87109375, 0.08203125, -0.9375};
static const float MLP_B_LOSS[] = {0.37109375};
static const float MLP_B_GW1[] = {-0.1416015625, -0.0020751953125, 0.01104736328125, -0.00299072265625, -0.0308837890625, 0.00830078125, 0.0712890625, 0.0252685546875, -0.033203125, 0.060546875, 0.03466796875, -0.02490234375, -0.0771484375, 0.0096435546875, 0.044189453125, 0.017333984375, -0.0027618408203125, 0.033203125, 0.1357421875, -0.05908203125, 0.0, -0.009765625, -0.0250244140625, 0.0, 0.050048828125, 0.0213623046875, -0.044189453125, -0.07373046875, 0.025390625, -0.033203125};
static const float MLP_B_GB1[] = {0.08544921875, 0.015625, 0.044189453125, 0.027099609375, 0.03759765625, 0.033203125};
static const float MLP_B_GW2[] = {-0.06494140625, 0.07080078125, -0.07421875, -0.0128173828125, 0.03955078125, -0.051025390625, 0.05615234375, 0.0216064453125, -0.0301513671875, 0.015380859375, 0.015625, -0.0140380859375, -0.028076171875, 0.06103515625, -0.076171875, 0.0296630859375, 0.01141357421875, -0.0159912109375};
static const float MLP_B_GB2[] = {-0.041015625, 0.08544921875, -0.0732421875};
static df_tensor *formula_tensor(df_dtype t, int rank, const int64_t *dims, int mul, int mod, int off, float div) {
    df_status st;
    df_tensor *x = df_tensor_new(t, rank, dims, &st);
    uint16_t *p = (uint16_t *)df_tensor_data(x);
    for (int64_t i = 0; i < df_tensor_num_elements(x); i++) p[i] = to16(t, (float)((i * mul) % mod - off) / div);
    return x;
}
static df_output bias_add(df_graph *g, df_output v, df_output b, df_dtype t) {
    df_op_builder *bd = df_op_new(g, "BiasAdd", NULL);
    df_op_add_input(bd, v);
    df_op_add_input(bd, b);
    df_op_set_attr_type(bd, "T", t);
    return (df_output){df_op_finish(bd), 0};
}
/* Largest |ours - TensorFlow's| over |TensorFlow's| + floor, and the element where it is. */
static double worst(const df_tensor *got, const float *want, int n, double floor_, int *at) {
    double w = 0;
    *at = -1;
    if (df_tensor_num_elements(got) != n) return INFINITY;
    for (int i = 0; i < n; i++) {
        double a = from16(df_tensor_dtype(got), ((const uint16_t *)df_tensor_data(got))[i]);
        double e = fabs(a - want[i]) / (fabs(want[i]) + floor_);
        if (!(e <= w)) { w = e; *at = i; }
    }
    return w;
}
static void check_mlp(df_dtype t, const float *const want[6], const int n_want[6]) {
    df_status st;
    df_graph *g = df_graph_new();
    const int64_t dx[2] = {4, 5}, dw1[2] = {5, 6}, db1[1] = {6}, dw2[2] = {6, 3}, db2[1] = {3};
    df_tensor *v[5] = {formula_tensor(t, 2, dx, 7, 11, 5, 4), formula_tensor(t, 2, dw1, 5, 13, 6, 8),
                       formula_tensor(t, 1, db1, 3, 7, 3, 8), formula_tensor(t, 2, dw2, 11, 17, 8, 8),
                       formula_tensor(t, 1, db2, 2, 5, 2, 4)};
    df_output p[5];
    const char *names[5] = {"x", "w1", "b1", "w2", "b2"};
    for (int i = 0; i < 5; i++) p[i] = df_placeholder(g, names[i], t, -1, NULL);
    df_output h = df_relu(g, bias_add(g, df_matmul(g, p[0], p[1], 0, 0), p[2], t));
    df_output y = df_tanh(g, bias_add(g, df_matmul(g, h, p[3], 0, 0), p[4], t));
    const int32_t axes[2] = {0, 1};
    df_output loss = df_reduce_mean(g, df_square(g, y), 2, axes, 0);
    df_output fetch[6] = {y, loss};
    CHECK_EQ_INT(df_gradients(g, 1, &loss, NULL, 4, p + 1, fetch + 2), DF_OK);
    df_session *s = df_session_new(g, NULL, &st);
    CHECK_OK(&st);
    df_tensor *out[6] = {NULL};
    if (s) df_session_run(s, p, v, 5, fetch, out, 6, NULL, 0, &st);
    CHECK_OK(&st);
    for (int i = 0; st.code == DF_OK && i < 6; i++) {
        int at;
        CHECK_EQ_INT(df_tensor_dtype(out[i]), t);
        /* forward: TensorFlow's bits; gradients: TensorFlow's graph rounds in other places
           (its TanhGrad and Mean's gradient round each step), so within a few units in the last place */
        double tol = i < 2 ? 0 : t == DF_HALF ? 4e-3 : 3e-2, w = worst(out[i], want[i], n_want[i], i < 2 ? 1 : 0.02, &at);
        CHECK_MSG(w <= tol, "%s output %d element %d: %.9g vs TensorFlow's %.9g", df_dtype_name(t), i, at,
                  at >= 0 ? from16(t, ((const uint16_t *)df_tensor_data(out[i]))[at]) : NAN, at >= 0 ? want[i][at] : NAN);
    }
    for (int i = 0; i < 6; i++) df_tensor_release(out[i]);
    for (int i = 0; i < 5; i++) df_tensor_release(v[i]);
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(half_mlp_forward_and_gradients_match_tensorflow) {
    const float *const h[6] = {MLP_H_Y, MLP_H_LOSS, MLP_H_GW1, MLP_H_GB1, MLP_H_GW2, MLP_H_GB2};
    const int nh[6] = {LEN(MLP_H_Y), LEN(MLP_H_LOSS), LEN(MLP_H_GW1), LEN(MLP_H_GB1), LEN(MLP_H_GW2), LEN(MLP_H_GB2)};
    check_mlp(DF_HALF, h, nh);
    const float *const b[6] = {MLP_B_Y, MLP_B_LOSS, MLP_B_GW1, MLP_B_GB1, MLP_B_GW2, MLP_B_GB2};
    const int nb[6] = {LEN(MLP_B_Y), LEN(MLP_B_LOSS), LEN(MLP_B_GW1), LEN(MLP_B_GB1), LEN(MLP_B_GW2), LEN(MLP_B_GB2)};
    check_mlp(DF_BFLOAT16, b, nb);
}

/* ---- Cast (TensorFlow 2.21's results) ---- */
static df_tensor *run_cast(df_tensor *x, df_dtype to) {
    df_status st;
    df_graph *g = df_graph_new();
    df_output p = df_placeholder(g, "x", df_tensor_dtype(x), -1, NULL), y = df_cast(g, p, to);
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *out = NULL;
    if (s) df_session_run(s, &p, &x, 1, &y, &out, 1, NULL, 0, &st);
    CHECK_OK(&st);
    df_session_free(s);
    df_graph_free(g);
    return out;
}
static df_tensor *vec(df_dtype t, int n, const void *data) {
    df_status st;
    int64_t d = n;
    df_tensor *x = df_tensor_new(t, 1, &d, &st);
    memcpy(df_tensor_data(x), data, (size_t)n * df_dtype_size(t));
    return x;
}
static void check_bits16(df_tensor *x, df_dtype to, const uint16_t *want, int n, const char *what) {
    df_tensor *y = run_cast(x, to);
    CHECK_MSG(y && df_tensor_dtype(y) == to && df_tensor_num_elements(y) == n, "%s: wrong result", what);
    for (int i = 0; y && i < n && i < df_tensor_num_elements(y); i++)
        CHECK_MSG(((const uint16_t *)df_tensor_data(y))[i] == want[i], "%s element %d: %#06x, TensorFlow %#06x", what, i,
                  ((const uint16_t *)df_tensor_data(y))[i], want[i]);
    df_tensor_release(y);
    df_tensor_release(x);
}
static void check_ints(df_tensor *x, df_dtype to, const int64_t *want, int n, const char *what) {
    df_tensor *y = run_cast(x, to);
    CHECK_MSG(y && df_tensor_dtype(y) == to && df_tensor_num_elements(y) == n, "%s: wrong result", what);
    for (int i = 0; y && i < n && i < df_tensor_num_elements(y); i++) {
        const void *p = df_tensor_data(y);
        int64_t v = to == DF_INT32 ? ((const int32_t *)p)[i] : to == DF_INT64 ? ((const int64_t *)p)[i] : to == DF_UINT8 ? ((const uint8_t *)p)[i]
                  : to == DF_INT8 ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
        CHECK_MSG(v == want[i], "%s element %d: %lld, TensorFlow %lld", what, i, (long long)v, (long long)want[i]);
    }
    df_tensor_release(y);
    df_tensor_release(x);
}
DF_TEST(half_cast_matches_tensorflow) {
    const float f[] = {1.0009765625f, 1.00048828125f, 1.00146484375f, 65519.0f, 65520.0f, -65536.0f, 5.960464477539063e-08f,
                       2.9802322387695312e-08f, 2.98023259e-08f, 1e-9f, -0.0f, NAN, INFINITY, 3.14159265f, 1.00390625f, 1.005859375f};
    const uint16_t fh[] = {0x3c01, 0x3c00, 0x3c02, 0x7bff, 0x7c00, 0xfc00, 0x0001, 0x0000, 0x0001, 0x0000, 0x8000, 0x7e00, 0x7c00, 0x4248, 0x3c04, 0x3c06};
    const uint16_t fb[] = {0x3f80, 0x3f80, 0x3f80, 0x4780, 0x4780, 0xc780, 0x3380, 0x3300, 0x3300, 0x3089, 0x8000, 0x7fc0, 0x7f80, 0x4049, 0x3f80, 0x3f81};
    check_bits16(vec(DF_FLOAT, 16, f), DF_HALF, fh, 16, "float to half");
    check_bits16(vec(DF_FLOAT, 16, f), DF_BFLOAT16, fb, 16, "float to bfloat16");
    const double d[] = {1.0004882812500001, 0.1, 1e300, -7.5};     /* through float: rounded twice, as TensorFlow */
    const uint16_t dh[] = {0x3c00, 0x2e66, 0x7c00, 0xc780}, db[] = {0x3f80, 0x3dcd, 0x7f80, 0xc0f0};
    check_bits16(vec(DF_DOUBLE, 4, d), DF_HALF, dh, 4, "double to half");
    check_bits16(vec(DF_DOUBLE, 4, d), DF_BFLOAT16, db, 4, "double to bfloat16");
    const int32_t i32[] = {70000, 2049, 2051, -3, 16777217, 0};
    const uint16_t ih[] = {0x7c00, 0x6800, 0x6802, 0xc200, 0x7c00, 0x0000}, ib[] = {0x4789, 0x4500, 0x4500, 0xc040, 0x4b80, 0x0000};
    check_bits16(vec(DF_INT32, 6, i32), DF_HALF, ih, 6, "int32 to half");
    check_bits16(vec(DF_INT32, 6, i32), DF_BFLOAT16, ib, 6, "int32 to bfloat16");
    const float hv[] = {-2.5f, 2.75f, 65504.0f, -65504.0f, 300.0f, -1.0f, 0.5f, -0.0f, INFINITY, -INFINITY, NAN};
    uint16_t h16[11], b16[11];
    for (int i = 0; i < 11; i++) { h16[i] = df_float_to_half(hv[i]); b16[i] = df_float_to_bfloat16(hv[i]); }
    const int64_t m = INT32_MIN, m64 = INT64_MIN;
    const int64_t h_i32[] = {-2, 2, 65504, -65504, 300, -1, 0, 0, m, m, m}, b_i32[] = {-2, 2, 65536, -65536, 300, -1, 0, 0, m, m, m};
    const int64_t h_i64[] = {-2, 2, 65504, -65504, 300, -1, 0, 0, m64, m64, m64};
    const int64_t h_u8[] = {254, 2, 224, 32, 44, 255, 0, 0, 0, 0, 0}, b_u8[] = {0, 2, 255, 0, 255, 0, 0, 0, 0, 0, 0};
    const int64_t h_i8[] = {-2, 2, -32, 32, 44, -1, 0, 0, 0, 0, 0}, b_i8[] = {-2, 2, 127, -128, 127, -1, 0, 0, 0, 0, 0};
    const int64_t bools[] = {1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1};
    check_ints(vec(DF_HALF, 11, h16), DF_INT32, h_i32, 11, "half to int32");
    check_ints(vec(DF_BFLOAT16, 11, b16), DF_INT32, b_i32, 11, "bfloat16 to int32");
    check_ints(vec(DF_HALF, 11, h16), DF_INT64, h_i64, 11, "half to int64");
    check_ints(vec(DF_HALF, 11, h16), DF_UINT8, h_u8, 11, "half to uint8 (wraps)");
    check_ints(vec(DF_BFLOAT16, 11, b16), DF_UINT8, b_u8, 11, "bfloat16 to uint8 (saturates)");
    check_ints(vec(DF_HALF, 8, h16), DF_INT8, h_i8, 8, "half to int8");
    check_ints(vec(DF_BFLOAT16, 8, b16), DF_INT8, b_i8, 8, "bfloat16 to int8");
    check_ints(vec(DF_HALF, 11, h16), DF_BOOL, bools, 11, "half to bool");
    const uint16_t h2b[] = {0xc020, 0x4030, 0x4780, 0xc780, 0x4396, 0xbf80, 0x3f00, 0x8000};
    const uint16_t b2h[] = {0xc100, 0x4180, 0x7c00, 0xfc00, 0x5cb0, 0xbc00, 0x3800, 0x8000};
    check_bits16(vec(DF_HALF, 8, h16), DF_BFLOAT16, h2b, 8, "half to bfloat16");
    check_bits16(vec(DF_BFLOAT16, 8, b16), DF_HALF, b2h, 8, "bfloat16 to half");
    /* and back to float exactly */
    df_tensor *hx = vec(DF_HALF, 11, h16), *y = run_cast(hx, DF_FLOAT);
    df_tensor_release(hx);
    for (int i = 0; y && i < 8; i++) CHECK_MSG(((const float *)df_tensor_data(y))[i] == df_half_to_float(h16[i]), "half to float %d", i);
    df_tensor_release(y);
}

/* ---- data movement: 2-byte elements moved as they are ---- */
static df_output op_in(df_graph *g, const char *op, int n, const df_output *ins, df_dtype t) {
    df_op_builder *b = df_op_new(g, op, NULL);
    for (int i = 0; i < n; i++) df_op_add_input(b, ins[i]);
    if (t) df_op_set_attr_type(b, "T", t);
    return (df_output){df_op_finish(b), 0};
}
static df_output i32v(df_graph *g, int n, const int32_t *v) {
    df_status st;
    int64_t d = n;
    df_tensor *x = df_tensor_new(DF_INT32, 1, &d, &st);
    memcpy(df_tensor_data(x), v, (size_t)n * 4);
    df_output o = df_const(g, x);
    df_tensor_release(x);
    return o;
}
DF_TEST(half_data_movement_moves_two_byte_elements) {
    for (int k = 0; k < 2; k++) {
        df_dtype t = k ? DF_BFLOAT16 : DF_HALF;
        df_status st;
        df_graph *g = df_graph_new();
        const int64_t d23[2] = {2, 3};
        df_tensor *x = df_tensor_new(t, 2, d23, &st);
        uint16_t *xp = (uint16_t *)df_tensor_data(x);
        for (int i = 0; i < 6; i++) xp[i] = to16(t, (float)(i + 1) * 0.5f);   /* 0.5 1 1.5 / 2 2.5 3 */
        df_output p = df_placeholder(g, "x", t, 2, d23);
        const int32_t perm[2] = {1, 0}, pads[4] = {0, 1, 1, 0}, begin[2] = {0, 1}, size[2] = {2, 2}, idx[3] = {2, 0, 2};
        const int32_t mult[2] = {1, 2}, axis0[1] = {0};
        df_output tr = op_in(g, "Transpose", 2, (df_output[]){p, i32v(g, 2, perm)}, 0);
        df_output pad = op_in(g, "Pad", 2, (df_output[]){p, df_reshape(g, i32v(g, 4, pads), 2, (const int64_t[]){2, 2})}, 0);
        df_output sl = op_in(g, "Slice", 3, (df_output[]){p, i32v(g, 2, begin), i32v(g, 2, size)}, 0);
        df_output ga = op_in(g, "GatherV2", 3, (df_output[]){p, i32v(g, 3, idx), df_scalar_i32(g, 1)}, 0);
        df_output ti = op_in(g, "Tile", 2, (df_output[]){p, i32v(g, 2, mult)}, 0);
        df_op_builder *cb = df_op_new(g, "ConcatV2", NULL);
        df_op_add_input_list(cb, (df_output[]){p, p}, 2);
        df_op_add_input(cb, df_reshape(g, i32v(g, 1, axis0), 0, NULL));
        df_output cc = {df_op_finish(cb), 0};
        df_output sel = df_select(g, df_less(g, df_cast(g, p, DF_FLOAT), df_scalar_f32(g, 1.2f)), p, df_neg(g, p));
        df_output ones = op_in(g, "OnesLike", 1, &p, t), zeros = op_in(g, "ZerosLike", 1, &p, t);
        df_tensor *out[9] = {NULL};
        df_session *s = df_session_new(g, NULL, &st);
        CHECK_OK(&st);
        df_output all[9] = {tr, pad, sl, ga, ti, cc, sel, ones, zeros};
        if (s) df_session_run(s, &p, &x, 1, all, out, 9, NULL, 0, &st);
        CHECK_OK(&st);
        if (st.code == DF_OK) {
            /* expected, as element numbers of x (-1: zero padding, -2: one, 10+i: -x[i]) */
            static const int want_tr[] = {0, 3, 1, 4, 2, 5}, want_pad[] = {-1, 0, 1, 2, -1, 3, 4, 5, -1, -1, -1, -1};
            static const int want_sl[] = {1, 2, 4, 5}, want_ga[] = {2, 0, 2, 5, 3, 5};
            static const int want_ti[] = {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}, want_cc[] = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5};
            static const int want_sel[] = {0, 1, 12, 13, 14, 15}, want_ones[] = {-2, -2, -2, -2, -2, -2}, want_zero[] = {-1, -1, -1, -1, -1, -1};
            const int *want[9] = {want_tr, want_pad, want_sl, want_ga, want_ti, want_cc, want_sel, want_ones, want_zero};
            const int nw[9] = {6, 12, 4, 6, 12, 12, 6, 6, 6};
            for (int f = 0; f < 9; f++) {
                CHECK_MSG(df_tensor_dtype(out[f]) == t && df_tensor_num_elements(out[f]) == nw[f], "%s fetch %d: %s of %lld",
                          df_dtype_name(t), f, df_dtype_name(df_tensor_dtype(out[f])), (long long)df_tensor_num_elements(out[f]));
                if (df_tensor_num_elements(out[f]) != nw[f]) continue;
                const uint16_t *o = (const uint16_t *)df_tensor_data(out[f]);
                for (int i = 0; i < nw[f]; i++) {
                    int w = want[f][i];
                    uint16_t e = w == -1 ? 0 : w == -2 ? to16(t, 1.0f) : w >= 10 ? (uint16_t)(xp[w - 10] ^ 0x8000u) : xp[w];
                    CHECK_MSG(o[i] == e, "%s fetch %d element %d: %#06x, want %#06x", df_dtype_name(t), f, i, o[i], e);
                }
            }
        }
        for (int i = 0; i < 9; i++) df_tensor_release(out[i]);
        df_tensor_release(x);
        df_session_free(s);
        df_graph_free(g);
    }
}

/* ---- bad input: a clear status naming the node ---- */
DF_TEST(half_bad_input_names_the_node) {
    df_status st;
    df_graph *g = df_graph_new();
    const int64_t d[2] = {2, 3};
    df_output a = df_placeholder(g, "a", DF_HALF, -1, NULL), b = df_placeholder(g, "b", DF_HALF, -1, NULL);
    df_op_builder *mb = df_op_new(g, "MatMul", "bad_product");
    df_op_add_input(mb, a);
    df_op_add_input(mb, b);
    df_output m = {df_op_finish(mb), 0};
    df_op_builder *sb = df_op_new(g, "Softmax", "bad_softmax");
    df_op_add_input(sb, a);
    df_output sm = {df_op_finish(sb), 0};
    df_session *s = df_session_new(g, NULL, &st);
    df_status tst;
    df_tensor *x = df_tensor_new(DF_HALF, 2, d, &tst), *scalar = df_tensor_new(DF_HALF, 0, NULL, &tst), *out = NULL;
    memset(df_tensor_data(x), 0, 12);
    memset(df_tensor_data(scalar), 0, 2);
    df_output feeds[2] = {a, b};
    df_tensor *fv[2] = {x, x};
    df_session_run(s, feeds, fv, 2, &m, &out, 1, NULL, 0, &st);     /* [2,3] x [2,3] */
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "bad_product");
    CHECK(out == NULL);
    df_session_run(s, &a, &scalar, 1, &sm, &out, 1, NULL, 0, &st);   /* softmax of a scalar */
    CHECK_STATUS(&st, DF_INVALID_ARGUMENT, "bad_softmax");
    df_tensor_release(out);
    df_tensor_release(x);
    df_tensor_release(scalar);
    df_session_free(s);
    /* a half MatMul with a float operand: an error at graph building naming the node */
    df_output f = df_placeholder(g, "f", DF_FLOAT, -1, NULL);
    df_op_builder *xb = df_op_new(g, "MatMul", "mixed_product");
    df_op_add_input(xb, a);
    df_op_add_input(xb, f);
    df_op_finish(xb);
    CHECK_STATUS(df_graph_status(g), DF_INVALID_ARGUMENT, "mixed_product");
    df_graph_free(g);
}

/* ---- gradients build and run on half graphs: the same graph in half, bfloat16 and float32
   gives the same gradients up to the 16-bit rounding ---- */
static df_output grad_graph(df_graph *g, df_output x, df_output w, df_output k, df_dtype t) {
    /* conv + bias + relu, then elementwise ops, a softmax, reductions */
    int64_t strides[4] = {1, 1, 1, 1};
    df_op_builder *cb = df_op_new(g, "Conv2D", NULL);
    df_op_add_input(cb, x);
    df_op_add_input(cb, k);
    df_op_set_attr_type(cb, "T", t);
    df_op_set_attr_int_list(cb, "strides", strides, 4);
    df_op_set_attr_string(cb, "padding", "SAME");
    df_output c = {df_op_finish(cb), 0};                       /* [1, 4, 4, 2] */
    df_output h = df_reshape(g, df_relu(g, c), 2, (const int64_t[]){4, 8});
    df_output z = df_matmul(g, h, w, 0, 0);                   /* [4, 3] */
    df_output e = df_add(g, df_mul(g, df_sigmoid(g, z), df_exp(g, df_neg(g, df_square(g, z)))), df_tanh(g, z));
    df_output m = df_maximum(g, e, df_div(g, z, df_add(g, df_square(g, z), op1(g, "OnesLike", z, t))));
    df_output sm = df_softmax(g, df_sub(g, m, op1(g, "Sqrt", df_add(g, df_square(g, z), df_exp(g, z)), t)));
    const int32_t ax1[1] = {1}, ax0[1] = {0};
    df_output s = df_add(g, df_reduce_sum(g, df_mul(g, sm, z), 1, ax1, 0), df_reduce_mean(g, op1(g, "Rsqrt", df_exp(g, z), t), 1, ax1, 0));
    return df_reduce_sum(g, s, 1, ax0, 0);
}
static int grads_for(df_dtype t, double out[4][64], int n_out[4]) {
    df_status st;
    df_graph *g = df_graph_new();
    const int64_t dx[4] = {1, 4, 4, 1}, dk[4] = {3, 3, 1, 2}, dw[2] = {8, 3};
    df_output x = df_placeholder(g, "x", t, 4, dx), k = df_placeholder(g, "k", t, 4, dk), w = df_placeholder(g, "w", t, 2, dw);
    df_output loss = grad_graph(g, x, w, k, t);
    df_output wrt[3] = {x, k, w}, fetch[4] = {loss};
    int ok = df_gradients(g, 1, &loss, NULL, 3, wrt, fetch + 1) == DF_OK;
    CHECK_MSG(ok, "%s gradients: %s", df_dtype_name(t), df_graph_status(g)->message);
    df_tensor *v[3] = {formula_tensor(DF_HALF, 4, dx, 7, 11, 5, 4), formula_tensor(DF_HALF, 4, dk, 5, 13, 6, 8),
                       formula_tensor(DF_HALF, 2, dw, 3, 7, 3, 8)};
    df_tensor *fv[3] = {NULL}, *out_t[4] = {NULL};
    for (int i = 0; i < 3; i++) {        /* the same (half-representable) values in each type */
        df_tensor *f = df_tensor_new(t, df_tensor_rank(v[i]), (const int64_t[]){df_tensor_dim(v[i], 0), df_tensor_rank(v[i]) > 1 ? df_tensor_dim(v[i], 1) : 1,
                                     df_tensor_rank(v[i]) > 2 ? df_tensor_dim(v[i], 2) : 1, df_tensor_rank(v[i]) > 3 ? df_tensor_dim(v[i], 3) : 1}, &st);
        for (int64_t j = 0; j < df_tensor_num_elements(f); j++) {
            float val = df_half_to_float(((const uint16_t *)df_tensor_data(v[i]))[j]);
            if (t == DF_FLOAT) ((float *)df_tensor_data(f))[j] = val;
            else ((uint16_t *)df_tensor_data(f))[j] = to16(t, val);
        }
        fv[i] = f;
    }
    df_session *s = ok ? df_session_new(g, NULL, &st) : NULL;
    if (s) df_session_run(s, wrt, fv, 3, fetch, out_t, 4, NULL, 0, &st);
    if (s) CHECK_MSG(st.code == DF_OK, "%s: %s", df_dtype_name(t), st.message);
    ok = s && st.code == DF_OK;
    for (int i = 0; ok && i < 4; i++) {
        CHECK_EQ_INT(df_tensor_dtype(out_t[i]), t);
        n_out[i] = (int)df_tensor_num_elements(out_t[i]);
        for (int j = 0; j < n_out[i] && j < 64; j++)
            out[i][j] = t == DF_FLOAT ? ((const float *)df_tensor_data(out_t[i]))[j] : from16(t, ((const uint16_t *)df_tensor_data(out_t[i]))[j]);
    }
    for (int i = 0; i < 4; i++) df_tensor_release(out_t[i]);
    for (int i = 0; i < 3; i++) { df_tensor_release(v[i]); df_tensor_release(fv[i]); }
    df_session_free(s);
    df_graph_free(g);
    return ok;
}
DF_TEST(half_gradients_run_in_half_and_agree_with_float32) {
    double ref[4][64], got[4][64];
    int nr[4] = {0}, ng[4] = {0};
    if (!grads_for(DF_FLOAT, ref, nr)) return;
    for (int k = 0; k < 2; k++) {
        df_dtype t = k ? DF_BFLOAT16 : DF_HALF;
        if (!grads_for(t, got, ng)) continue;
        for (int i = 0; i < 4; i++) {
            CHECK_EQ_INT(ng[i], nr[i]);
            double scale = 0;
            for (int j = 0; j < nr[i]; j++) scale = fmax(scale, fabs(ref[i][j]));
            for (int j = 0; j < nr[i] && j < ng[i]; j++)
                CHECK_MSG(fabs(got[i][j] - ref[i][j]) <= (t == DF_HALF ? 0.02 : 0.1) * scale, "%s output %d element %d: %.6g, float32 %.6g",
                          df_dtype_name(t), i, j, got[i][j], ref[i][j]);
        }
    }
}

/* ---- the bulk conversions (F16C where the CPU has it, portable loops otherwise) agree with
   the scalar ones of dataflow.h for every 16-bit pattern ---- */
static void check_all_patterns(df_dtype t) {
    df_status st;
    df_graph *g = df_graph_new();
    int64_t n = 65536;
    df_tensor *x = df_tensor_new(t, 1, &n, &st);
    for (int64_t i = 0; i < n; i++) ((uint16_t *)df_tensor_data(x))[i] = (uint16_t)i;
    df_output p = df_placeholder(g, "x", t, 1, &n);
    df_output three = df_cast(g, df_scalar_f32(g, 3.0f), t);
    df_output y[2] = {df_div(g, p, three), df_maximum(g, p, p)};
    df_session *s = df_session_new(g, NULL, &st);
    df_tensor *out[2] = {NULL};
    if (s) df_session_run(s, &p, &x, 1, y, out, 2, NULL, 0, &st);
    CHECK_OK(&st);
    int bad = 0;
    for (int64_t i = 0; st.code == DF_OK && i < n && bad < 5; i++) {
        float v = from16(t, (uint16_t)i);
        uint16_t want = to16(t, v / 3.0f), got = ((const uint16_t *)df_tensor_data(out[0]))[i];
        uint16_t same = ((const uint16_t *)df_tensor_data(out[1]))[i];
        int nan = v != v;
        if (nan ? from16(t, got) == from16(t, got) || from16(t, same) == from16(t, same) : got != want || same != (uint16_t)i) {
            bad++;
            CHECK_MSG(0, "%s (%s kernels) pattern %#06llx: x/3 %#06x want %#06x, max(x,x) %#06x", df_dtype_name(t),
                      df_kernel_isa(), (unsigned long long)i, got, want, same);
        }
    }
    df_tensor_release(out[0]);
    df_tensor_release(out[1]);
    df_tensor_release(x);
    df_session_free(s);
    df_graph_free(g);
}
DF_TEST(half_conversions_agree_for_every_pattern) {
    check_all_patterns(DF_HALF);
    check_all_patterns(DF_BFLOAT16);
    CHECK_EQ_INT(df_set_kernel_isa("portable"), DF_OK);
    check_all_patterns(DF_HALF);
    check_all_patterns(DF_BFLOAT16);
    df_set_kernel_isa("auto");
}
