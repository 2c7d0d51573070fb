#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>

#include "core/util/json.h"

namespace mirrorlab::json {
// Lets QCOMPARE print both sides when two Values differ.
char* toString(const Value& v) {
    return qstrdup(dump(v).c_str());
}
}  // namespace mirrorlab::json

using mirrorlab::Error;
using mirrorlab::json::dump;
using mirrorlab::json::parse;
using mirrorlab::json::parse_file;
using mirrorlab::json::ParseError;
using mirrorlab::json::Value;

// JSON containing backslashes is written as ordinary string literals: moc's lexer misreads raw
// strings with a backslash before a quote and then finds no test class at all.
namespace {

std::string error_of(const auto& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "<no error>";
}

std::uint64_t bits_of(double d) {
    std::uint64_t b;
    std::memcpy(&b, &d, sizeof b);
    return b;
}

}  // namespace

class TestJson : public QObject {
    Q_OBJECT

private slots:
    void roundTrip_data() {
        QTest::addColumn<QString>("text");
        QTest::newRow("null") << "null";
        QTest::newRow("true") << "true";
        QTest::newRow("false") << "false";
        QTest::newRow("zero") << "0";
        QTest::newRow("negative int") << "-42";
        QTest::newRow("double") << "1.5";
        QTest::newRow("exponent") << "1e+300";
        QTest::newRow("small exponent") << "1e-07";
        QTest::newRow("integral double") << "3.0";
        QTest::newRow("negative zero double") << "-0.0";
        QTest::newRow("empty string") << "\"\"";
        QTest::newRow("empty array") << "[]";
        QTest::newRow("empty object") << "{}";
        QTest::newRow("nested") << R"({"b":[1,2.5,"x",null,true,{"c":{}}],"a":[[]]})";
        // nlohmann writes \u escapes with lowercase hex digits.
        QTest::newRow("escapes") << "\"q\\\" b\\\\ \\b\\f\\n\\r\\t \\u0001\\u001f /\"";
        QTest::newRow("utf8") << "\"h\u00e9llo \u20ac \U0001F600\"";
        QTest::newRow("int64 max") << "9223372036854775807";
        QTest::newRow("int64 min") << "-9223372036854775808";
    }
    void roundTrip() {
        QFETCH(QString, text);
        const std::string s = text.toStdString();
        const Value v = parse(s);
        QCOMPARE(dump(v), s);
        QCOMPARE(parse(dump(v, 2)), v);
        QCOMPARE(dump(parse(dump(v, 4))), s);
    }

    void whitespaceAndBom() {
        QCOMPARE(parse(" \t\r\n [ 1 ,\n\t2 ] \r\n"), parse("[1,2]"));
        QCOMPARE(parse("\xEF\xBB\xBF{\"a\":1}"), parse("{\"a\":1}"));
    }

    // Notepad's "Unicode" and PowerShell's default save: UTF-16, with or without the byte-order
    // mark. The message named a byte 0xFF or a control character U+0000; it names the encoding and
    // the fix.
    void utf16IsNamed() {
        using namespace std::string_literals;
        for (const std::string& text : {"\xFF\xFE{\0}\0"s, "\xFE\xFF\0{\0}"s, "{\0\"\0a\0\"\0:\0"s, "\0{\0}"s,
                                        "{\0\0\0}\0\0\0"s}) {
            try {
                parse(text, "model.json");
                QFAIL("parsed");
            } catch (const ParseError& error) {
                QVERIFY2(QString(error.what()).contains(QStringLiteral("model.json:1:1: the text is UTF-16 or UTF-32")) &&
                             QString(error.what()).contains(QStringLiteral("save it with the encoding UTF-8")),
                         error.what());
            }
        }
        QCOMPARE(parse("1"), parse(" 1"));  // one byte, and no NUL: nothing to do with this check
    }

    void escapes_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QByteArray>("expected");
        QTest::newRow("quote") << "\"\\\"\"" << QByteArray("\"");
        QTest::newRow("backslash") << "\"\\\\\"" << QByteArray("\\");
        QTest::newRow("slash") << "\"\\/\"" << QByteArray("/");
        QTest::newRow("backspace") << "\"\\b\"" << QByteArray("\b");
        QTest::newRow("formfeed") << "\"\\f\"" << QByteArray("\f");
        QTest::newRow("newline") << "\"\\n\"" << QByteArray("\n");
        QTest::newRow("return") << "\"\\r\"" << QByteArray("\r");
        QTest::newRow("tab") << "\"\\t\"" << QByteArray("\t");
        QTest::newRow("u ascii") << "\"\\u0041\"" << QByteArray("A");
        QTest::newRow("u nul") << "\"a\\u0000b\"" << QByteArray("a\0b", 3);
        QTest::newRow("u two bytes") << "\"\\u00e9\"" << QByteArray("\xC3\xA9");
        QTest::newRow("u three bytes upper hex") << "\"\\u20AC\"" << QByteArray("\xE2\x82\xAC");
        QTest::newRow("u max bmp") << "\"\\uFFFF\"" << QByteArray("\xEF\xBF\xBF");
        QTest::newRow("surrogate pair") << "\"\\uD83D\\uDE00\"" << QByteArray("\xF0\x9F\x98\x80");
        QTest::newRow("lowest pair") << "\"\\uD800\\uDC00\"" << QByteArray("\xF0\x90\x80\x80");
        QTest::newRow("highest pair") << "\"\\uDBFF\\uDFFF\"" << QByteArray("\xF4\x8F\xBF\xBF");
        QTest::newRow("raw utf8") << "\"\xE6\x97\xA5\xF0\x9F\x98\x80\"" << QByteArray("\xE6\x97\xA5\xF0\x9F\x98\x80");
        QTest::newRow("mixed") << "\"a\\tb\\u0063\\\\d\"" << QByteArray("a\tbc\\d");
    }
    void escapes() {
        QFETCH(QString, json);
        QFETCH(QByteArray, expected);
        const Value v = parse(json.toStdString());
        QCOMPARE(v.as_string(), expected.toStdString());
        QCOMPARE(parse(dump(v)).as_string(), expected.toStdString());
    }

    void dumpEscapes() {
        QCOMPARE(dump(Value(std::string("\"\\/\b\f\n\r\t\x01\x1f\x7f"))),
                 std::string("\"\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f") + "\x7f\"");
        QCOMPARE(dump(Value(std::string("a\0b", 3))), std::string("\"a\\u0000b\""));
        QCOMPARE(dump(Value("\xC3\xA9")), std::string("\"\xC3\xA9\""));
        QVERIFY(error_of([] { dump(Value("bad \xFF byte")); }).find("not valid UTF-8") != std::string::npos);
        QVERIFY(error_of([] { dump(Value("\xED\xA0\x80")); }).find("not valid UTF-8") != std::string::npos);
        // Reports replace each bad byte with U+FFFD and stay parseable; good sequences are kept.
        Value object = Value::object();
        object.set("caf\xE9", Value("caf\xE9 \xC3\xA9 \xED\xA0\x80"));
        const std::string lossy = dump(object, -1, mirrorlab::json::InvalidUtf8::Replace);
        QCOMPARE(lossy, std::string("{\"caf\xEF\xBF\xBD\":\"caf\xEF\xBF\xBD \xC3\xA9 \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"}"));
        QCOMPARE(parse(lossy).find("caf\xEF\xBF\xBD")->as_string(), std::string("caf\xEF\xBF\xBD \xC3\xA9 \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
    }

    void integers() {
        const Value max = parse("9223372036854775807");
        QVERIFY(max.is_integer());
        QCOMPARE(max.as_int64(), std::numeric_limits<std::int64_t>::max());
        const Value min = parse("-9223372036854775808");
        QVERIFY(min.is_integer());
        QCOMPARE(min.as_int64(), std::numeric_limits<std::int64_t>::min());
        // 2^53 + 1 is not representable as a double; it must survive exactly.
        QCOMPARE(parse("9007199254740993").as_int64(), std::int64_t{9007199254740993});
        QCOMPARE(dump(parse("9007199254740993")), std::string("9007199254740993"));

        const Value beyond = parse("9223372036854775808");
        QVERIFY(beyond.is_number());
        QVERIFY(!beyond.is_integer());
        QCOMPARE(beyond.as_double(), 9223372036854775808.0);
        QVERIFY(error_of([&] { beyond.as_int64(); }).find("out of range for a 64-bit integer") != std::string::npos);

        QVERIFY(parse("-0").is_integer());
        QCOMPARE(parse("-0").as_int64(), std::int64_t{0});
        QVERIFY(!parse("1.0").is_integer());
        QVERIFY(!parse("1e2").is_integer());
        QCOMPARE(parse("1e2").as_int64(), std::int64_t{100});
        QCOMPARE(parse("-2.0").as_int64(), std::int64_t{-2});
        QCOMPARE(error_of([] { parse("2.5").as_int64(); }),
                 std::string("expected an integer, got the non-integral number 2.5"));
        QVERIFY(error_of([] { Value(std::numeric_limits<double>::quiet_NaN()).as_int64(); })
                    .find("non-integral") != std::string::npos);
        QCOMPARE(Value(-9223372036854775808.0).as_int64(), std::numeric_limits<std::int64_t>::min());
        QCOMPARE(parse("7").as_double(), 7.0);
    }

    void integerConstructors() {
        QCOMPARE(Value(5).as_int64(), std::int64_t{5});
        QCOMPARE(Value(std::int64_t{-7}).as_int64(), std::int64_t{-7});
        QCOMPARE(Value(std::size_t{9}).as_int64(), std::int64_t{9});
        QCOMPARE(Value(static_cast<unsigned short>(3)).as_int64(), std::int64_t{3});
        QCOMPARE(Value(std::numeric_limits<std::uint64_t>::max() / 2).as_int64(),
                 std::numeric_limits<std::int64_t>::max());
        QVERIFY(error_of([] { Value(std::numeric_limits<std::uint64_t>::max()); })
                    .find("does not fit") != std::string::npos);
        QVERIFY(Value(5).is_integer());
        QVERIFY(!Value(5.0).is_integer());
        QVERIFY(Value(1.5f).is_number());
    }

    void doubles_data() {
        QTest::addColumn<double>("value");
        QTest::newRow("0.1") << 0.1;
        QTest::newRow("1/3") << 1.0 / 3.0;
        QTest::newRow("-2.5") << -2.5;
        QTest::newRow("pi") << 3.141592653589793;
        QTest::newRow("1e21") << 1e21;
        QTest::newRow("1e-7") << 1e-7;
        QTest::newRow("max") << std::numeric_limits<double>::max();
        QTest::newRow("lowest") << std::numeric_limits<double>::lowest();
        QTest::newRow("min normal") << std::numeric_limits<double>::min();
        QTest::newRow("min subnormal") << std::numeric_limits<double>::denorm_min();
        QTest::newRow("2^53+2") << 9007199254740994.0;
        QTest::newRow("integral") << 3.0;
        QTest::newRow("big integral") << 123456789012345678.0;
        QTest::newRow("negative zero") << -0.0;
    }
    void doubles() {
        QFETCH(double, value);
        const std::string text = dump(Value(value));
        const Value back = parse(text);
        QVERIFY2(!back.is_integer(), text.c_str());
        QCOMPARE(bits_of(back.as_double()), bits_of(value));
    }

    void doubleFormatting() {
        QCOMPARE(dump(Value(0.1)), std::string("0.1"));
        QCOMPARE(dump(Value(3.0)), std::string("3.0"));
        QCOMPARE(dump(Value(1e21)), std::string("1e+21"));
        QCOMPARE(dump(Value(std::numeric_limits<double>::quiet_NaN())), std::string("null"));
        QCOMPARE(dump(Value(std::numeric_limits<double>::infinity())), std::string("null"));
        QCOMPARE(dump(Value(-std::numeric_limits<double>::infinity())), std::string("null"));
    }

    void numberEdgeCases() {
        QCOMPARE(parse("1E5").as_double(), 1e5);
        QCOMPARE(parse("1e-5").as_double(), 1e-5);
        QCOMPARE(parse("-0.5e+2").as_double(), -50.0);
        QCOMPARE(parse("0.000001").as_double(), 1e-6);
        // Underflow rounds to zero; that is the nearest double, not an error.
        QCOMPARE(parse("1e-400").as_double(), 0.0);
        QCOMPARE(bits_of(parse("-1e-400").as_double()), bits_of(-0.0));
        QCOMPARE(parse("0.00000000000000000000000000000000000000001e-300").as_double(), 0.0);
        QCOMPARE(parse("100000000000000000000").as_double(), 1e20);
    }

    void malformed_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<int>("line");
        QTest::addColumn<int>("column");
        QTest::addColumn<QString>("message");

        QTest::newRow("empty") << QByteArray("") << 1 << 1 << "empty input, expected a JSON value";
        QTest::newRow("whitespace only") << QByteArray("  \n  ") << 2 << 3 << "empty input, expected a JSON value";
        QTest::newRow("trailing garbage") << QByteArray("{} x") << 1 << 4
                                          << "expected end of input after the JSON value, found 'x'";
        QTest::newRow("two values") << QByteArray("1 2") << 1 << 3
                                    << "expected end of input after the JSON value, found '2'";
        QTest::newRow("missing comma in object") << QByteArray("{\n  \"a\": 1,\n  \"b\": 2 x\n}") << 3 << 10
                                                 << "expected ',' or '}' after object member, found 'x'";
        QTest::newRow("missing comma in array") << QByteArray("[1 2]") << 1 << 4
                                                << "expected ',' or ']' after array element, found '2'";
        QTest::newRow("trailing comma array") << QByteArray("[1,2,]") << 1 << 5
                                              << "trailing comma before ']' is not allowed";
        QTest::newRow("trailing comma object") << QByteArray("{\"a\":1 , }") << 1 << 8
                                               << "trailing comma before '}' is not allowed";
        QTest::newRow("leading comma") << QByteArray("[,1]") << 1 << 2 << "expected a JSON value, found ','";
        QTest::newRow("unclosed array") << QByteArray("[1,") << 1 << 4 << "expected a JSON value, found end of input";
        QTest::newRow("unclosed array 2") << QByteArray("[1") << 1 << 3
                                          << "expected ',' or ']' after array element, found end of input";
        QTest::newRow("unclosed object") << QByteArray("{\"a\":1") << 1 << 7
                                         << "expected ',' or '}' after object member, found end of input";
        QTest::newRow("missing colon") << QByteArray("{\"a\" 1}") << 1 << 6 << "expected ':' after object key, found '1'";
        QTest::newRow("missing value") << QByteArray("{\"a\":}") << 1 << 6 << "expected a JSON value, found '}'";
        QTest::newRow("bare key") << QByteArray("{a:1}") << 1 << 2
                                  << "expected a string key or '}' in object, found 'a'";
        QTest::newRow("number key") << QByteArray("{\"a\":1,2:3}") << 1 << 8
                                    << "expected a string key in object, found '2'";
        QTest::newRow("single quoted key") << QByteArray("{'a':1}") << 1 << 2
                                           << "object keys must be enclosed in double quotes, found \"'\"";
        QTest::newRow("single quoted string") << QByteArray("['a']") << 1 << 2
                                              << "strings must be enclosed in double quotes, found \"'\"";
        QTest::newRow("line comment") << QByteArray("{\n// note\n}") << 2 << 1 << "comments are not allowed in JSON";
        QTest::newRow("block comment") << QByteArray("[1, /* x */ 2]") << 1 << 5 << "comments are not allowed in JSON";
        QTest::newRow("lone slash") << QByteArray("/") << 1 << 1 << "expected a JSON value, found '/'";
        QTest::newRow("leading zero") << QByteArray("[01]") << 1 << 2 << "leading zeros are not allowed in numbers";
        QTest::newRow("negative leading zero") << QByteArray("-012") << 1 << 1 << "leading zeros are not allowed in numbers";
        QTest::newRow("plus sign") << QByteArray("+1") << 1 << 1 << "a number must start with a digit or '-', found '+'";
        QTest::newRow("leading point") << QByteArray(".5") << 1 << 1 << "a number must start with a digit or '-', found '.'";
        QTest::newRow("trailing point") << QByteArray("1.") << 1 << 3
                                        << "expected a digit after the decimal point, found end of input";
        QTest::newRow("point then exponent") << QByteArray("1.e5") << 1 << 3
                                             << "expected a digit after the decimal point, found 'e'";
        QTest::newRow("empty exponent") << QByteArray("1e") << 1 << 3 << "expected a digit in the exponent, found end of input";
        QTest::newRow("exponent sign only") << QByteArray("[1e+]") << 1 << 5 << "expected a digit in the exponent, found ']'";
        QTest::newRow("minus alone") << QByteArray("-") << 1 << 2 << "expected a digit after '-', found end of input";
        QTest::newRow("minus letter") << QByteArray("-x") << 1 << 2 << "expected a digit after '-', found 'x'";
        QTest::newRow("hex number") << QByteArray("0x10") << 1 << 2
                                    << "expected end of input after the JSON value, found 'x'";
        QTest::newRow("too large") << QByteArray("[1e400]") << 1 << 2 << "number '1e400' is too large for a double";
        QTest::newRow("too large negative") << QByteArray("-1.5e309") << 1 << 1
                                            << "number '-1.5e309' is too large for a double";
        QTest::newRow("NaN") << QByteArray("[NaN]") << 1 << 2 << "NaN and Infinity are not valid JSON numbers";
        QTest::newRow("Infinity") << QByteArray("Infinity") << 1 << 1 << "NaN and Infinity are not valid JSON numbers";
        QTest::newRow("True") << QByteArray("True") << 1 << 1
                              << "invalid literal 'True', expected a JSON value (true, false, null, a number, a "
                                 "string, an array or an object)";
        QTest::newRow("truncated literal") << QByteArray("[nul]") << 1 << 2
                                           << "invalid literal 'nul', expected a JSON value (true, false, null, a "
                                              "number, a string, an array or an object)";
        QTest::newRow("literal suffix") << QByteArray("truex") << 1 << 1
                                        << "invalid literal 'truex', expected a JSON value (true, false, null, a "
                                           "number, a string, an array or an object)";
        QTest::newRow("unterminated string") << QByteArray("[\"abc") << 1 << 2
                                             << "unterminated string, missing closing '\"'";
        QTest::newRow("unterminated after escape") << QByteArray("\"ab\\") << 1 << 1
                                                   << "unterminated string, missing closing '\"'";
        QTest::newRow("raw newline in string") << QByteArray("{\"a\": \"x\n\"}") << 1 << 9
                                               << "control character U+000A must be escaped in a string (missing "
                                                  "closing '\"'?)";
        QTest::newRow("raw tab in string") << QByteArray("\"a\tb\"") << 1 << 3
                                           << "control character U+0009 must be escaped in a string";
        QTest::newRow("raw nul in string") << QByteArray("\"a\0b\"", 5) << 1 << 3
                                           << "control character U+0000 must be escaped in a string";
        QTest::newRow("bad escape") << QByteArray("\"a\\x\"") << 1 << 3
                                    << "invalid escape sequence in string: backslash followed by 'x'";
        QTest::newRow("short unicode escape") << QByteArray("\"\\u12\"") << 1 << 2 << "expected 4 hex digits after '\\u'";
        QTest::newRow("bad hex digit") << QByteArray("\"\\u12G4\"") << 1 << 2 << "expected 4 hex digits after '\\u'";
        QTest::newRow("lone high surrogate") << QByteArray("\"\\uD800\"") << 1 << 2
                                             << "unpaired high surrogate \\uD800 in string (must be followed by a "
                                                "low surrogate \\uDC00-\\uDFFF)";
        QTest::newRow("high then ascii escape") << QByteArray("\"\\uD83D\\u0041\"") << 1 << 2
                                                << "unpaired high surrogate \\uD83D in string (must be followed by "
                                                   "a low surrogate \\uDC00-\\uDFFF)";
        QTest::newRow("high then bad hex") << QByteArray("\"\\uD83D\\uZZZZ\"") << 1 << 8
                                           << "expected 4 hex digits after '\\u'";
        QTest::newRow("lone low surrogate") << QByteArray("\"x\\uDC00\"") << 1 << 3
                                            << "unpaired low surrogate \\uDC00 in string";
        QTest::newRow("invalid utf8 byte") << QByteArray("\"a\xFF\"") << 1 << 3
                                           << "invalid UTF-8 in string (byte 0xFF); JSON text must be UTF-8";
        QTest::newRow("truncated utf8") << QByteArray("\"\xC3\"") << 1 << 2
                                        << "invalid UTF-8 in string (byte 0xC3); JSON text must be UTF-8";
        QTest::newRow("overlong utf8") << QByteArray("\"\xC0\xAF\"") << 1 << 2
                                       << "invalid UTF-8 in string (byte 0xC0); JSON text must be UTF-8";
        QTest::newRow("utf8 surrogate") << QByteArray("\"\xED\xA0\x80\"") << 1 << 2
                                        << "invalid UTF-8 in string (byte 0xED); JSON text must be UTF-8";
        QTest::newRow("utf8 beyond 10FFFF") << QByteArray("\"\xF4\x90\x80\x80\"") << 1 << 2
                                            << "invalid UTF-8 in string (byte 0xF4); JSON text must be UTF-8";
        QTest::newRow("column counts characters") << QByteArray("[\"\xC3\xA9\xE2\x82\xAC\", ?]") << 1 << 8
                                                  << "expected a JSON value, found '?'";
        QTest::newRow("non-ascii outside string") << QByteArray("[\xC3\xA9]") << 1 << 2
                                                  << "expected a JSON value, found '\xC3\xA9' (U+00E9)";
        QTest::newRow("invalid byte outside string") << QByteArray("[\x80]") << 1 << 2
                                                     << "expected a JSON value, found invalid UTF-8 byte 0x80";
        QTest::newRow("control char outside string") << QByteArray("[\x0C]") << 1 << 2
                                                     << "expected a JSON value, found control character U+000C";
        QTest::newRow("crlf lines") << QByteArray("{\r\n\"a\":1,\r\n\"b\" 2}") << 3 << 5
                                    << "expected ':' after object key, found '2'";
        QTest::newRow("duplicate key") << QByteArray("{\n  \"name\": 1,\n  \"name\": 2\n}") << 3 << 3
                                       << "duplicate key 'name' in object (first defined at line 2, column 3)";
        // The spot is the start of the token, whatever its length or escapes.
        QTest::newRow("long unexpected number") << QByteArray("[1 234]") << 1 << 4
                                                << "expected ',' or ']' after array element, found '2'";
        QTest::newRow("unexpected string") << QByteArray("[1 \"a\\\"b\"]") << 1 << 4
                                           << "expected ',' or ']' after array element, found '\"'";
        QTest::newRow("unexpected literal") << QByteArray("{\"a\": null false}") << 1 << 12
                                            << "expected ',' or '}' after object member, found 'f'";
        QTest::newRow("duplicate escaped key") << QByteArray("{\"a\\\"\": 1, \"a\\\"\": 2}") << 1 << 12
                                               << "duplicate key 'a\"' in object (first defined at line 1, column 2)";
        QTest::newRow("nested too deep after text") << QByteArray("{\"k\": ") + QByteArray(256, '[') << 1 << 262
                                                    << "arrays and objects nested deeper than 256 levels";
    }
    void malformed() {
        QFETCH(QByteArray, text);
        QFETCH(int, line);
        QFETCH(int, column);
        QFETCH(QString, message);
        try {
            parse(std::string_view(text.constData(), static_cast<std::size_t>(text.size())), "model.json");
            QFAIL("no ParseError");
        } catch (const ParseError& e) {
            QCOMPARE(QString::fromStdString(e.reason), message);
            QCOMPARE(static_cast<int>(e.line), line);
            QCOMPARE(static_cast<int>(e.column), column);
            QCOMPARE(e.source, std::string("model.json"));
            const std::string expected = "model.json:" + std::to_string(line) + ":" + std::to_string(column) +
                                         ": " + message.toStdString();
            QCOMPARE(std::string(e.what()), expected);
        }
    }

    void parseErrorIsMirrorlabError() {
        try {
            parse("[1,]");
            QFAIL("no error");
        } catch (const Error& e) {
            QCOMPARE(std::string(e.what()), std::string("<json>:1:3: trailing comma before ']' is not allowed"));
        }
    }

    void depthLimit() {
        const auto nested = [](int depth, char open, char close) {
            return std::string(static_cast<std::size_t>(depth), open) +
                   std::string(static_cast<std::size_t>(depth), close);
        };
        QCOMPARE(dump(parse(nested(256, '[', ']'))), nested(256, '[', ']'));
        try {
            parse(nested(257, '[', ']'));
            QFAIL("no error");
        } catch (const ParseError& e) {
            QCOMPARE(e.line, std::size_t{1});
            QCOMPARE(e.column, std::size_t{257});
            QCOMPARE(e.reason, std::string("arrays and objects nested deeper than 256 levels"));
        }
        // Far past the limit and unterminated: must fail cleanly, not overflow the stack.
        QVERIFY_THROWS_EXCEPTION(ParseError, parse(std::string(1'000'000, '[')));

        std::string objects;
        for (int i = 0; i < 257; ++i) objects += "{\"a\":";
        objects += "1" + std::string(257, '}');
        QVERIFY_THROWS_EXCEPTION(ParseError, parse(objects));
        objects = objects.substr(5, objects.size() - 6);  // 256 levels is fine
        QCOMPARE(parse(objects).at("a").size(), std::size_t{1});
    }

    void duplicateKeys() {
        QVERIFY_THROWS_EXCEPTION(ParseError, parse(R"({"a":1,"b":2,"a":3})"));
        QCOMPARE(parse(R"({"a":{"x":1},"b":{"x":2}})").size(), std::size_t{2});  // per object
        // Large objects use a hash index; a duplicate there must still be found.
        std::string big = "{";
        for (int i = 0; i < 100; ++i) big += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
        const std::string ok = big.substr(0, big.size() - 1) + "}";
        QCOMPARE(parse(ok).size(), std::size_t{100});
        QCOMPARE(parse(ok).at("k99").as_int64(), std::int64_t{99});
        try {
            parse(big + "\"k20\":0}");
            QFAIL("no error");
        } catch (const ParseError& e) {
            QVERIFY(e.reason.find("duplicate key 'k20'") != std::string::npos);
        }
        try {
            parse(big + "\"k3\":0}");  // a key from before the index was built
            QFAIL("no error");
        } catch (const ParseError& e) {
            QVERIFY(e.reason.find("duplicate key 'k3'") != std::string::npos);
        }
    }

    void typeQueries() {
        const Value v = parse(R"({"n":null,"b":true,"i":1,"d":1.5,"s":"x","a":[],"o":{}})");
        QVERIFY(v.at("n").is_null());
        QVERIFY(v.at("b").is_bool());
        QVERIFY(v.at("i").is_number() && v.at("i").is_integer());
        QVERIFY(v.at("d").is_number() && !v.at("d").is_integer());
        QVERIFY(v.at("s").is_string());
        QVERIFY(v.at("a").is_array());
        QVERIFY(v.at("o").is_object());
        QCOMPARE(std::string(v.at("n").type_name()), std::string("null"));
        QCOMPARE(std::string(v.at("b").type_name()), std::string("boolean"));
        QCOMPARE(std::string(v.at("i").type_name()), std::string("number"));
        QCOMPARE(std::string(v.at("d").type_name()), std::string("number"));
        QCOMPARE(std::string(v.at("s").type_name()), std::string("string"));
        QCOMPARE(std::string(v.at("a").type_name()), std::string("array"));
        QCOMPARE(std::string(v.at("o").type_name()), std::string("object"));
        QVERIFY(Value().is_null());
        QVERIFY(Value(nullptr).is_null());
        QVERIFY(Value("text").is_string());  // not converted to bool
        QVERIFY(Value(std::string("s")).is_string());
        QVERIFY(Value(false).is_bool());
    }

    void accessorErrors() {
        QCOMPARE(error_of([] { Value(1).as_string(); }), std::string("expected a string, got a number"));
        QCOMPARE(error_of([] { Value("x").as_bool(); }), std::string("expected a boolean, got a string"));
        QCOMPARE(error_of([] { Value().as_double(); }), std::string("expected a number, got null"));
        QCOMPARE(error_of([] { Value(true).as_int64(); }), std::string("expected an integer, got a boolean"));
        QCOMPARE(error_of([] { Value::object().as_array(); }), std::string("expected an array, got an object"));
        QCOMPARE(error_of([] { Value::array().as_object(); }), std::string("expected an object, got an array"));
        QCOMPARE(error_of([] { Value(2.5).size(); }), std::string("expected an array or an object, got a number"));
        QCOMPARE(error_of([] { Value("s").find("k"); }), std::string("expected an object, got a string"));
        QCOMPARE(error_of([] { Value(1)["k"]; }), std::string("expected an object, got a number"));
        QCOMPARE(error_of([] { Value::object().push_back(1); }), std::string("expected an array, got an object"));
        QCOMPARE(error_of([] { parse(R"({"a":1})").at("b"); }), std::string("missing key 'b'"));
        QCOMPARE(error_of([] { parse("[1,2]")[2]; }),
                 std::string("index 2 is out of range for an array of 2 elements"));
        QCOMPARE(error_of([] { Value(1.0e30).as_int64(); }),
                 std::string("number 1e+30 is out of range for a 64-bit integer"));
    }

    void objectHelpers() {
        Value v;
        v["z"] = 1;  // null becomes an object
        v.set("a", "two");
        v["m"]["inner"] = true;
        v.set("z", 10);  // replacing keeps the original position
        QVERIFY(v.contains("a"));
        QVERIFY(!v.contains("b"));
        QVERIFY(v.find("b") == nullptr);
        QCOMPARE(v.find("a")->as_string(), std::string("two"));
        QCOMPARE(v.at("z").as_int64(), std::int64_t{10});
        QCOMPARE(v.size(), std::size_t{3});
        QCOMPARE(dump(v), std::string(R"({"z":10,"a":"two","m":{"inner":true}})"));
        v.at("a") = Value::array();
        v["a"].push_back(1);
        v["a"].push_back("x");
        v["a"][0] = 5;
        QCOMPARE(dump(v["a"]), std::string(R"([5,"x"])"));

        Value list;
        list.push_back(Value());  // null becomes an array
        QVERIFY(list.is_array());
        QCOMPARE(list.size(), std::size_t{1});
    }

    void keyOrderPreserved() {
        const std::string text = R"({"zeta":1,"alpha":2,"mid":{"y":1,"b":2,"x":3},"beta":[{"k2":0,"k1":0}]})";
        QCOMPARE(dump(parse(text)), text);
        const Value v = parse(text);
        QCOMPARE(v.as_object()[0].first, std::string("zeta"));
        QCOMPARE(v.as_object()[3].first, std::string("beta"));
    }

    void prettyPrint() {
        const Value v = parse(R"({"a":1,"b":[true,null],"c":{},"d":[],"e":{"f":"g"}})");
        QCOMPARE(dump(v, 2), std::string("{\n"
                                         "  \"a\": 1,\n"
                                         "  \"b\": [\n"
                                         "    true,\n"
                                         "    null\n"
                                         "  ],\n"
                                         "  \"c\": {},\n"
                                         "  \"d\": [],\n"
                                         "  \"e\": {\n"
                                         "    \"f\": \"g\"\n"
                                         "  }\n"
                                         "}"));
        QCOMPARE(dump(parse("[1,[2]]"), 0), std::string("[\n1,\n[\n2\n]\n]"));
        QCOMPARE(dump(parse(R"({"a": [1, 2]})"), -1), std::string(R"({"a":[1,2]})"));
    }

    void equality() {
        QCOMPARE(parse(R"({"a":1,"b":2})"), parse(R"({"b":2,"a":1})"));
        QVERIFY(parse("[1,2]") != parse("[2,1]"));
        QCOMPARE(Value(1), Value(1.0));
        QVERIFY(Value(1) != Value(1.5));
        QVERIFY(Value(1) != Value(true));
        QVERIFY(Value("1") != Value(1));
        QVERIFY(Value() == Value(nullptr));
        QVERIFY(Value::array() != Value::object());
        // Through double these would compare equal.
        QVERIFY(Value(std::int64_t{9007199254740993}) != Value(9007199254740992.0));
        QVERIFY(Value(std::int64_t{9007199254740992}) == Value(9007199254740992.0));
        QVERIFY(Value(std::numeric_limits<std::int64_t>::max()) != Value(9223372036854775808.0));
        QVERIFY(parse(R"({"a":1})") != parse(R"({"a":1,"b":2})"));
        QVERIFY(parse(R"({"a":1,"c":2})") != parse(R"({"a":1,"b":2})"));
    }

    void parseFile() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string good = dir.filePath("good.json").toStdString();
        std::ofstream(good) << "{\n  \"layers\": [1, 2]\n}\n";
        QCOMPARE(parse_file(good).at("layers").size(), std::size_t{2});

        const std::string bad = dir.filePath("bad.json").toStdString();
        std::ofstream(bad) << "{\n  \"layers\": [1, 2,]\n}\n";
        try {
            parse_file(bad);
            QFAIL("no error");
        } catch (const ParseError& e) {
            QCOMPARE(e.source, bad);
            QCOMPARE(std::string(e.what()), bad + ":2:18: trailing comma before ']' is not allowed");
        }

        const std::string missing = dir.filePath("missing.json").toStdString();
        QCOMPARE(error_of([&] { parse_file(missing); }),
                 "cannot open JSON file '" + missing + "': No such file or directory");

        const std::string directory = dir.path().toStdString();
        QCOMPARE(error_of([&] { parse_file(directory); }),
                 "cannot read JSON file '" + directory + "': Is a directory");

        const std::string empty = dir.filePath("empty.json").toStdString();
        std::ofstream(empty).flush();
        QCOMPARE(error_of([&] { parse_file(empty); }), empty + ":1:1: empty input, expected a JSON value");
    }

    // Issue #13: `--model /dev/zero` read until memory ran out, and a FIFO waited for a writer
    // forever. Only regular files are read, and none larger than 64 MiB.
    void parseFileRefusesDevicesFifosAndHugeFiles() {
        QCOMPARE(error_of([&] { parse_file("/dev/zero"); }),
                 std::string("cannot read JSON file '/dev/zero': it is a character device, not a regular "
                             "file; give the path of a file"));
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string fifo = dir.filePath("model.json").toStdString();
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        QCOMPARE(error_of([&] { parse_file(fifo); }),
                 "cannot read JSON file '" + fifo + "': it is a FIFO (named pipe), not a regular file; give the path of a file");
        // A sparse file: 65 MiB long, nothing on disk, refused before a byte is read.
        const std::string huge = dir.filePath("huge.json").toStdString();
        std::ofstream(huge).flush();
        QCOMPARE(::truncate(huge.c_str(), off_t{65} << 20), 0);
        QCOMPARE(error_of([&] { parse_file(huge); }),
                 "cannot read JSON file '" + huge + "': it is 65 MiB, more than the 64 MiB limit for a JSON file");
    }

    void largeFile() {
        std::string text = "[";
        for (int i = 0; i < 100000; ++i) text += (i ? "," : "") + std::to_string(i * 0.25);
        text += "]";
        QTemporaryDir dir;
        const std::string path = dir.filePath("big.json").toStdString();
        std::ofstream(path) << text;
        const Value v = parse_file(path);  // bigger than parse_file's read buffer
        QCOMPARE(v.size(), std::size_t{100000});
        QCOMPARE(v[99999].as_double(), 99999 * 0.25);
    }
};

QTEST_APPLESS_MAIN(TestJson)
#include "test_json.moc"
