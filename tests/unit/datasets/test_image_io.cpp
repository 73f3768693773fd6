// Image decoding (datasets/image_io.h): PNG through libspng, JPEG through libjpeg-turbo, chosen by content.
// Corrupt, truncated, oversized and other-format files are one lact::Error naming the file; the pixels of
// what does decode are checked here by construction and against PIL in tests/unit/datasets/image_decode_parity.py.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "datasets/image_io.h"
#include "datasets/png_tag.h"
#include "system/error.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

namespace fs = std::filesystem;

// --- A PNG writer by hand (stored deflate blocks), so every colour type and bit depth can be made. ---

uint32_t crc32_of(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string chunk(const std::string& type, const std::string& data) {
  return be32(static_cast<uint32_t>(data.size())) + type + data + be32(crc32_of(type + data));
}

std::string zlib_stored(const std::string& raw) {
  std::string out = "\x78\x01";
  size_t pos = 0;
  do {
    const size_t n = std::min<size_t>(65535, raw.size() - pos);
    out += static_cast<char>(pos + n == raw.size() ? 1 : 0);
    out += static_cast<char>(n & 0xFF), out += static_cast<char>(n >> 8);
    out += static_cast<char>(~n & 0xFF), out += static_cast<char>((~n >> 8) & 0xFF);
    out += raw.substr(pos, n);
    pos += n;
  } while (pos < raw.size());
  uint32_t a = 1, b = 0;
  for (unsigned char c : raw) a = (a + c) % 65521, b = (b + a) % 65521;
  return out + be32((b << 16) | a);
}

// `rows`: the scanlines without their filter byte (filter 0 is added), `extra`: chunks before IDAT.
std::string make_png(uint32_t w, uint32_t h, int depth, int colour, const std::vector<std::string>& rows,
                     const std::string& extra = "") {
  std::string ihdr = be32(w) + be32(h);
  ihdr += static_cast<char>(depth), ihdr += static_cast<char>(colour), ihdr += std::string(3, '\0');
  std::string raw;
  for (const std::string& row : rows) raw += '\0' + row;
  return "\x89PNG\r\n\x1A\n" + chunk("IHDR", ihdr) + extra + chunk("IDAT", zlib_stored(raw)) + chunk("IEND", "");
}

// 2x1 RGBA: an opaque red pixel and a half-transparent blue one.
std::string rgba_png() { return make_png(2, 1, 8, 6, {std::string("\xFF\x00\x00\xFF\x00\x00\xFF\x80", 8)}); }

Rgba8Image decode(const std::string& bytes, const std::string& name = "x.png") {
  return decode_image(name, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string decode_error(const std::string& bytes, const std::string& name = "x.png") {
  return test::error_of([&] { decode(bytes, name); });
}

// A 16x16 colour gradient, baseline JPEG, 4:2:0, quality 75, as PIL writes it (660 bytes).
std::string small_jpeg() {
  static const char* const hex =
      "ffd8ffe000104a46494600010100000100010000ffdb004300080606070605080707070909080a0c140d0c0b0b0c1912130f141d1a1f"
      "1e1d1a1c1c20242e2720222c231c1c2837292c30313434341f27393d38323c2e333432ffdb0043010909090c0b0c180d0d1832211c21"
      "3232323232323232323232323232323232323232323232323232323232323232323232323232323232323232323232323232ffc00011"
      "080010001003012200021101031101ffc4001f0000010501010101010100000000000000000102030405060708090a0bffc400b51000"
      "02010303020403050504040000017d01020300041105122131410613516107227114328191a1082342b1c11552d1f02433627282090a"
      "161718191a25262728292a3435363738393a434445464748494a535455565758595a636465666768696a737475767778797a83848586"
      "8788898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5"
      "e6e7e8e9eaf1f2f3f4f5f6f7f8f9faffc4001f0100030101010101010101010000000000000102030405060708090a0bffc400b51100"
      "020102040403040705040400010277000102031104052131061241510761711322328108144291a1b1c109233352f0156272d10a1624"
      "34e125f11718191a262728292a35363738393a434445464748494a535455565758595a636465666768696a737475767778797a828384"
      "85868788898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae2e3e4"
      "e5e6e7e8e9eaf2f3f4f5f6f7f8f9faffda000c03010002110311003f00f37d3b40e9f2575da7681d3e4fd2ba4d3b40e9f27e95d769da"
      "074f928a554321cfb6d4ffd9";
  std::string out;
  for (const char* p = hex; p[0] && p[1]; p += 2) out += static_cast<char>(std::stoi(std::string(p, 2), nullptr, 16));
  return out;
}

// The first DHT segment replaced by one whose 16 code-length counts sum to 272: stb_image 2.27 wrote the
// 257th and later entries past its 257-byte table (UBSan: index out of bounds), libjpeg refuses the table.
std::string jpeg_with_dht_counts_past_256() {
  const std::string jpeg = small_jpeg();
  const size_t dht = jpeg.find("\xFF\xC4");
  const size_t old_length =
      (static_cast<unsigned char>(jpeg[dht + 2]) << 8) | static_cast<unsigned char>(jpeg[dht + 3]);
  std::string table = "\x00" + std::string(8, '\0') + std::string(8, '\x22');  // class 0 id 0; 8 x 34 codes
  for (int i = 0; i < 272; ++i) table += static_cast<char>(i % 12);
  const size_t length = 2 + table.size();
  std::string segment = "\xFF\xC4";
  segment += static_cast<char>(length >> 8), segment += static_cast<char>(length & 0xFF);
  return jpeg.substr(0, dht) + segment + table + jpeg.substr(dht + 2 + old_length);
}

TEST(ImageIo, JpegWhoseHuffmanCountsSumPast256IsRefused) {
  const std::string error = decode_error(jpeg_with_dht_counts_past_256(), "view.jpg");
  EXPECT_EQ(error, "view.jpg: cannot decode JPEG: Bogus Huffman table definition");
}

TEST(ImageIo, SmallJpegDecodes) {
  const Rgba8Image image = decode(small_jpeg(), "view.jpg");
  EXPECT_EQ(image.width, 16);
  EXPECT_EQ(image.height, 16);
  EXPECT_FALSE(image.has_alpha);
  ASSERT_EQ(image.pixels.size(), 16u * 16 * 4);
  // The gradient was r = 16x, g = 16y; quality 75 with 4:2:0 keeps it within 16 levels (PIL's exact values are
  // tests/unit/datasets/image_decode_parity.py's).
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) {
      const uint8_t* p = image.pixels.data() + (y * 16 + x) * 4;
      EXPECT_NEAR(p[0], 16 * x, 16) << x << "," << y;
      EXPECT_NEAR(p[1], 16 * y, 16) << x << "," << y;
      EXPECT_EQ(p[3], 255);
    }
}

TEST(ImageIo, PngPixelsAndAlphaAsWritten) {
  const Rgba8Image image = decode(rgba_png());
  EXPECT_TRUE(image.has_alpha);
  EXPECT_EQ(image.pixels, (std::vector<uint8_t>{255, 0, 0, 255, 0, 0, 255, 128}));
}

TEST(ImageIo, FlippedIdatByteIsAnError) {
  // A pixel byte inside the stored block: the zlib checksum fails before the chunk's CRC is reached.
  std::string png = rgba_png();
  const size_t idat = png.find("IDAT");
  png[idat + 4 + 9] ^= 0x10;
  EXPECT_EQ(decode_error(png), "x.png: cannot decode PNG: IDAT stream error");
  // The CRC itself: the pixels are intact, the chunk is not.
  png = rgba_png();
  png[png.find("IEND") - 5] ^= 0x01;
  EXPECT_EQ(decode_error(png), "x.png: cannot decode PNG: invalid chunk checksum");
}

TEST(ImageIo, FlippedByteInCompressedPngIsAnError) {
  // lact's own writer (stb's deflate) on a gradient; every byte of the IDAT data flipped in turn.
  Image image{8, 8, std::vector<float>(8 * 8 * 3)};
  for (size_t i = 0; i < image.rgb.size(); ++i) image.rgb[i] = static_cast<float>(i % 29) / 28.0f;
  const fs::path file = fs::temp_directory_path() / ("lact_image_flip_" + std::to_string(::getpid()) + ".png");
  write_png(file.string(), image);
  std::string png;
  {
    std::ifstream in(file, std::ios::binary);
    png.assign(std::istreambuf_iterator<char>(in), {});
  }
  fs::remove(file);
  ASSERT_EQ(decode(png).width, 8);
  const size_t idat = png.find("IDAT") + 4, end = png.find("IEND") - 4;
  for (size_t i = idat; i < end; ++i) {
    std::string bad = png;
    bad[i] ^= 0x04;
    EXPECT_NE(decode_error(bad).find("x.png: cannot decode PNG: "), std::string::npos) << "byte " << i;
  }
}

TEST(ImageIo, WrongAdlerWithAValidCrcIsAnError) {
  // The zlib stream's own checksum, with the chunk CRC recomputed so only Adler-32 can catch it.
  const std::string raw = std::string("\0\xFF\x00\x00\xFF\x00\x00\xFF\x80", 9);
  std::string z = zlib_stored(raw);
  z[z.size() - 1] ^= 1;
  std::string ihdr = be32(2) + be32(1) + std::string("\x08\x06\0\0\0", 5);
  const std::string png = "\x89PNG\r\n\x1A\n" + chunk("IHDR", ihdr) + chunk("IDAT", z) + chunk("IEND", "");
  EXPECT_NE(decode_error(png).find("x.png: cannot decode PNG: "), std::string::npos) << decode_error(png);
}

TEST(ImageIo, BadCrcOnAnAncillaryChunkIsAnError) {
  std::string text = chunk("tEXt", std::string("Title\0lact", 10));
  text[text.size() - 1] ^= 1;
  const std::string png = make_png(2, 1, 8, 6, {std::string("\xFF\x00\x00\xFF\x00\x00\xFF\x80", 8)}, text);
  EXPECT_EQ(decode_error(png), "x.png: cannot decode PNG: invalid chunk checksum");
}

struct OtherFormat {
  const char* name;
  std::string bytes;
};

// Real (decodable) files of the formats stb_image also read, all behind a .png name.
std::vector<OtherFormat> other_formats() {
  std::string psd =
      std::string("8BPS\0\x01", 6) + std::string(6, '\0') + std::string("\0\x03\0\0\0\x01\0\0\0\x01\0\x08\0\x03", 14);
  psd += std::string(12, '\0') + std::string("\0\0\x10\x20\x30", 5);
  return {
      {"GIF", std::string("GIF87a\x02\x00\x01\x00\x81\x00\x00\x0a\x14\x1e\x00\x00\x00\x00\x00\x00\x00\x00\x00\x2c"
                          "\x00\x00\x00\x00\x02\x00\x01\x00\x00\x08\x05\x00\x01\x00\x08\x08\x00\x3b",
                          44)},
      {"PSD", psd},
      {"Radiance HDR", "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 1\n\x80\x80\x80\x81"},
      {"PNM", std::string("P6\n2 1\n255\n\x0a\x14\x1e\x0a\x14\x1e", 17)},
      {"BMP", std::string("BM\x3e\0\0\0\0\0\0\0\x36\0\0\0\x28\0\0\0\x02\0\0\0\x01\0\0\0\x01\0\x18\0\0\0\0\0\x08\0\0\0"
                          "\xc4\x0e\0\0\xc4\x0e\0\0\0\0\0\0\0\0\0\0\x1e\x14\x0a\x1e\x14\x0a\0\0",
                          62)},
  };
}

TEST(ImageIo, OtherFormatsBehindAPngNameAreRefused) {
  const fs::path dir = fs::temp_directory_path() / ("lact_image_io_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const OtherFormat& f : other_formats()) {
    const fs::path file = dir / "view.png";
    std::ofstream(file, std::ios::binary) << f.bytes;
    EXPECT_EQ(test::error_of([&] { read_image(file.string()); }),
              file.string() + ": not a PNG or JPEG (looks like " + f.name + ")");
    int w = 0, h = 0;
    EXPECT_FALSE(read_image_size(file.string(), w, h)) << f.name;
  }
  // TGA has no signature: its content is simply not recognised.
  const std::string tga("\0\0\x02\0\0\0\0\0\0\0\0\0\x02\0\x01\0\x18\0\x1e\x14\x0a\x1e\x14\x0a", 24);
  EXPECT_EQ(decode_error(tga), "x.png: not a PNG or JPEG (unrecognised content)");
  EXPECT_EQ(decode_error(""), "x.png: not a PNG or JPEG (the file is empty)");
  fs::remove_all(dir);
}

TEST(ImageIo, EveryTruncationIsAnError) {
  const std::string png = rgba_png();
  // Up to IEND's type: libspng does not read the CRC of IEND (which has no data), so only those 4 bytes may go.
  for (size_t n = 0; n + 4 < png.size(); ++n) EXPECT_NE(decode_error(png.substr(0, n)), "") << "PNG prefix " << n;
  const std::string jpeg = small_jpeg();
  for (size_t n = 0; n < jpeg.size(); ++n) EXPECT_NE(decode_error(jpeg.substr(0, n), "v.jpg"), "") << n;
  EXPECT_EQ(decode_error(jpeg.substr(0, jpeg.size() - 40), "v.jpg"),
            "v.jpg: cannot decode JPEG: Premature end of JPEG file");
}

TEST(ImageIo, HugeHeaderSizesAreRefusedBeforeDecoding) {
  // Headers only: no pixel data would follow, so any attempt to allocate and decode would fail otherwise.
  const std::string limit =
      "exceeds the limit of 65536 a side and 64 Mpixel: downscale it first (the models work at a few hundred pixels "
      "a side)";
  for (uint32_t side : {10000u, 65536u, 65537u, 1000000u}) {
    const std::string png = make_png(side, side, 8, 6, {});
    EXPECT_EQ(decode_error(png),
              "x.png: image of " + std::to_string(side) + "x" + std::to_string(side) + " (HxW) " + limit);
  }
  std::string jpeg = small_jpeg();
  const size_t sof = jpeg.find("\xFF\xC0");
  jpeg[sof + 5] = '\x4E', jpeg[sof + 6] = '\x20', jpeg[sof + 7] = '\x4E', jpeg[sof + 8] = '\x20';
  EXPECT_EQ(decode_error(jpeg, "v.jpg"), "v.jpg: image of 20000x20000 (HxW) " + limit);
  jpeg[sof + 5] = '\xFF', jpeg[sof + 6] = '\xF0';
  EXPECT_EQ(decode_error(jpeg, "v.jpg"),
            "v.jpg: cannot decode JPEG: Maximum supported image dimension is 65500 pixels");
}

TEST(ImageIo, SixteenBitGreyIsRefusedOtherDepthsDecode) {
  EXPECT_EQ(decode_error(make_png(1, 1, 16, 0, {std::string("\x12\x34", 2)})),
            "x.png: 16-bit greyscale PNG is not supported (PIL, the official loader, clips it to 0..255); save it "
            "as 8-bit");
  // 16-bit RGB keeps the high byte (as PIL); 4-bit grey scales by 17; 1-bit to 0 / 255.
  EXPECT_EQ(decode(make_png(1, 1, 16, 2, {std::string("\x12\x34\x56\x78\x9a\xbc", 6)})).pixels,
            (std::vector<uint8_t>{0x12, 0x56, 0x9a, 255}));
  EXPECT_EQ(decode(make_png(2, 1, 4, 0, {std::string("\x3c", 1)})).pixels,
            (std::vector<uint8_t>{51, 51, 51, 255, 204, 204, 204, 255}));
  EXPECT_EQ(decode(make_png(2, 1, 1, 0, {std::string("\x80", 1)})).pixels,
            (std::vector<uint8_t>{255, 255, 255, 255, 0, 0, 0, 255}));
}

TEST(ImageIo, AlphaReportedAsBefore) {
  // Grey + alpha: an alpha channel.
  Rgba8Image la = decode(make_png(1, 1, 8, 4, {std::string("\x40\x80", 2)}));
  EXPECT_TRUE(la.has_alpha);
  EXPECT_EQ(la.pixels, (std::vector<uint8_t>{64, 64, 64, 128}));
  // A palette with tRNS: an alpha channel.
  const std::string plte = chunk("PLTE", std::string("\x0a\x14\x1e\xc8\xb4\xa0", 6));
  Rgba8Image pal = decode(make_png(2, 1, 8, 3, {std::string("\x00\x01", 2)}, plte + chunk("tRNS", "\x33")));
  EXPECT_TRUE(pal.has_alpha);
  EXPECT_EQ(pal.pixels, (std::vector<uint8_t>{10, 20, 30, 0x33, 200, 180, 160, 255}));
  // RGB with a tRNS key colour: the key pixel is transparent, and that counts as alpha (as with stb_image).
  const std::string key = chunk("tRNS", std::string("\0\x0a\0\x14\0\x1e", 6));
  Rgba8Image rgb = decode(make_png(2, 1, 8, 2, {std::string("\x0a\x14\x1e\x0b\x14\x1e", 6)}, key));
  EXPECT_TRUE(rgb.has_alpha);
  EXPECT_EQ(rgb.pixels, (std::vector<uint8_t>{10, 20, 30, 0, 11, 20, 30, 255}));
}

TEST(ImageIo, SizesFromTheHeaderOnly) {
  const fs::path dir = fs::temp_directory_path() / ("lact_image_size_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string png = make_png(3, 2, 8, 6, {std::string(12, '\x7f'), std::string(12, '\x7f')});
  std::ofstream(dir / "a.png", std::ios::binary) << png.substr(0, 33);  // signature and IHDR only
  std::ofstream(dir / "b.png", std::ios::binary) << small_jpeg();       // a JPEG whatever its name
  int w = 0, h = 0;
  EXPECT_TRUE(read_image_size((dir / "a.png").string(), w, h));
  EXPECT_EQ(w, 3);
  EXPECT_EQ(h, 2);
  EXPECT_TRUE(read_image_size((dir / "b.png").string(), w, h));
  EXPECT_EQ(w, 16);
  EXPECT_EQ(h, 16);
  EXPECT_EQ(read_image((dir / "b.png").string()).width, 16);
  fs::remove_all(dir);
}

TEST(ImageIo, WrittenPngCarriesLactsMarkAndDecodesAsWritten) {
  // The mark by hand: a tEXt chunk of 13 bytes, "Software\0lact", right after IHDR; libspng (which checks every
  // chunk's CRC, BadCrcOnAnAncillaryChunkIsAnError) decodes the file to the pixels written.
  const fs::path dir = fs::temp_directory_path() / ("lact_image_mark_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Image image{5, 3, std::vector<float>(5 * 3 * 3)};
  for (size_t i = 0; i < image.rgb.size(); ++i) image.rgb[i] = static_cast<float>(i * 17 % 256) / 255.0f;
  const std::string path = (dir / "view.png").string();
  write_png(path, image);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.substr(33, 4 + 4 + 13), std::string("\0\0\0\x0dtEXtSoftware\0lact", 21));
  EXPECT_EQ(bytes.substr(33 + 21 + 4, 8).substr(4), "IDAT");
  const Rgba8Image decoded = read_image(path);
  ASSERT_EQ(decoded.pixels.size(), size_t{5 * 3 * 4});
  for (size_t p = 0; p < 15; ++p)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(decoded.pixels[p * 4 + c], (p * 3 + c) * 17 % 256) << p << "," << c;
  EXPECT_TRUE(is_lact_png(path));
  // Without the mark (encode_png, what serve sends), another tEXt, a cut file, a folder, a FIFO, nothing.
  std::ofstream(dir / "plain.png", std::ios::binary) << encode_png(1, 1, decoded.pixels.data());
  std::string other = bytes;
  other.replace(33 + 8, 8, "Comment!");
  std::ofstream(dir / "other.png", std::ios::binary) << other;
  std::ofstream(dir / "cut.png", std::ios::binary) << bytes.substr(0, 50);
  ASSERT_EQ(::mkfifo((dir / "fifo.png").c_str(), 0600), 0);
  for (const char* name : {"plain.png", "other.png", "cut.png", "fifo.png", "missing.png", ""})
    EXPECT_FALSE(is_lact_png((dir / name).string())) << name;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lact
