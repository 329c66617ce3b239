//! The text of source files for the HTML report: `--source-encoding NAME` (as javac's
//! `-encoding` and jacococli's `--encoding`) or, without it, UTF-8, and a file that is not
//! UTF-8 read as windows-1252 (the superset of Latin-1 that editors and browsers mean by it)
//! rather than left out. A UTF-8 byte order mark is not text.

/// An encoding `--source-encoding` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    /// ISO-8859-1: each byte is the code point of its value.
    Latin1,
    /// windows-1252: Latin-1 with printable characters at 0x80..=0x9F.
    Windows1252,
    /// US-ASCII: read as UTF-8 (its subset).
    Ascii,
}

/// The names the option takes, for its message.
const KNOWN: &str = "UTF-8, ISO-8859-1 (latin1), windows-1252 (Cp1252) and US-ASCII";

impl Encoding {
    /// The encoding of a name as Java spells it (`UTF-8`, `UTF8`, `ISO-8859-1`, `ISO8859_1`,
    /// `latin1`, `Cp1252`, `windows-1252`, `US-ASCII` …: case, `-` and `_` do not matter).
    pub fn parse(name: &str) -> Result<Encoding, String> {
        let n: String = name
            .chars()
            .filter(|c| !matches!(c, '-' | '_'))
            .collect::<String>()
            .to_ascii_lowercase();
        Ok(match n.as_str() {
            "utf8" => Encoding::Utf8,
            "iso88591" | "88591" | "latin1" | "l1" | "cp819" | "ibm819" => Encoding::Latin1,
            "windows1252" | "cp1252" => Encoding::Windows1252,
            "usascii" | "ascii" | "ascii7" | "iso646us" => Encoding::Ascii,
            _ => {
                return Err(format!(
                    "--source-encoding '{name}': unknown encoding; bci knows {KNOWN}"
                ))
            }
        })
    }
}

/// What [`decode`] had to do beyond decoding as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Note {
    /// No encoding given and the file is not UTF-8: read as windows-1252.
    ReadAs1252,
    /// Said to be UTF-8 (or US-ASCII) and it is not: bytes that are not shown as U+FFFD.
    Invalid,
}

/// windows-1252's characters at 0x80..=0x9F (the five bytes it leaves undefined keep their
/// Latin-1 control character, as browsers do).
const CP1252_HIGH: [char; 32] = [
    '\u{20ac}', '\u{81}', '\u{201a}', '\u{192}', '\u{201e}', '\u{2026}', '\u{2020}', '\u{2021}',
    '\u{2c6}', '\u{2030}', '\u{160}', '\u{2039}', '\u{152}', '\u{8d}', '\u{17d}', '\u{8f}',
    '\u{90}', '\u{2018}', '\u{2019}', '\u{201c}', '\u{201d}', '\u{2022}', '\u{2013}', '\u{2014}',
    '\u{2dc}', '\u{2122}', '\u{161}', '\u{203a}', '\u{153}', '\u{9d}', '\u{17e}', '\u{178}',
];

fn single_byte(bytes: &[u8], cp1252: bool) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            0x80..=0x9f if cp1252 => CP1252_HIGH[(b - 0x80) as usize],
            _ => b as char,
        })
        .collect()
}

/// The text of a source file's bytes in `enc` (None: UTF-8, else windows-1252), and what had
/// to be done about bytes that were not.
pub fn decode(bytes: &[u8], enc: Option<Encoding>) -> (String, Option<Note>) {
    match enc {
        Some(Encoding::Latin1) => (single_byte(bytes, false), None),
        Some(Encoding::Windows1252) => (single_byte(bytes, true), None),
        _ => {
            let b = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
            match std::str::from_utf8(b) {
                Ok(t) => (t.to_string(), None),
                Err(_) if enc.is_none() => (single_byte(bytes, true), Some(Note::ReadAs1252)),
                Err(_) => (String::from_utf8_lossy(b).into_owned(), Some(Note::Invalid)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_java_spells_them() {
        for (n, e) in [
            ("UTF-8", Encoding::Utf8),
            ("utf8", Encoding::Utf8),
            ("ISO-8859-1", Encoding::Latin1),
            ("ISO8859_1", Encoding::Latin1),
            ("latin1", Encoding::Latin1),
            ("Cp1252", Encoding::Windows1252),
            ("windows-1252", Encoding::Windows1252),
            ("US-ASCII", Encoding::Ascii),
        ] {
            assert_eq!(Encoding::parse(n), Ok(e), "{n}");
        }
        assert!(Encoding::parse("UTF-16").is_err());
    }

    #[test]
    fn decoding() {
        let latin1 = b"caf\xe9 \x80";
        assert_eq!(decode(latin1, Some(Encoding::Latin1)).0, "caf\u{e9} \u{80}");
        assert_eq!(
            decode(latin1, Some(Encoding::Windows1252)).0,
            "caf\u{e9} \u{20ac}"
        );
        assert_eq!(
            decode(latin1, None),
            ("caf\u{e9} \u{20ac}".to_string(), Some(Note::ReadAs1252))
        );
        assert_eq!(
            decode(latin1, Some(Encoding::Utf8)),
            ("caf\u{fffd} \u{fffd}".to_string(), Some(Note::Invalid))
        );
        assert_eq!(
            decode("\u{feff}é".as_bytes(), None),
            ("é".to_string(), None)
        );
    }
}
