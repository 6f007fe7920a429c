//! Seccomp test vectors as JSON Lines (FORMATS.md §2).
//!
//! `{"arch": u32, "nr": int, "ip": u64, "args": [6 x u64], "action": u32}`,
//! one object per line; other keys are ignored; `nr` is the signed 32-bit
//! `int nr` (0xffffffff may appear as -1) and is compared as u32.

use cbpf::SeccompData;
use serde_json::Value;

/// One vector: the input and, when the line has one, the expected action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vector {
    /// 1-based line number in the file.
    pub line: usize,
    pub data: SeccompData,
    pub action: Option<u32>,
}

/// Why a vector line is unusable. Always names the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VectorError {
    #[error("line {line}: not valid JSON: {msg}")]
    Json { line: usize, msg: String },
    #[error("line {line}: expected a JSON object")]
    NotObject { line: usize },
    #[error("line {line}: missing field `{field}`")]
    Missing { line: usize, field: &'static str },
    #[error("line {line}: field `{field}` must be {what}")]
    BadField { line: usize, field: &'static str, what: &'static str },
}

fn uint(v: &Value, line: usize, field: &'static str, max: u64) -> Result<u64, VectorError> {
    let what = if max == u64::from(u32::MAX) { "an integer in 0..=4294967295" } else { "an integer in 0..=2^64-1" };
    match v.as_u64() {
        Some(n) if n <= max => Ok(n),
        _ => Err(VectorError::BadField { line, field, what }),
    }
}

/// Parses one line (already known not to be blank).
pub fn parse_line(text: &str, line: usize) -> Result<Vector, VectorError> {
    let v: Value = serde_json::from_str(text).map_err(|e| VectorError::Json { line, msg: e.to_string() })?;
    let obj = v.as_object().ok_or(VectorError::NotObject { line })?;
    let get = |field: &'static str| obj.get(field).ok_or(VectorError::Missing { line, field });
    let arch = uint(get("arch")?, line, "arch", u64::from(u32::MAX))? as u32;
    let nr_v = get("nr")?;
    let nr = match (nr_v.as_i64(), nr_v.as_u64()) {
        (Some(n), _) if (i64::from(i32::MIN)..=i64::from(u32::MAX)).contains(&n) => n as u32 as i32,
        (_, Some(n)) if n <= u64::from(u32::MAX) => n as u32 as i32,
        _ => return Err(VectorError::BadField { line, field: "nr", what: "an integer in -2^31..=2^32-1" }),
    };
    let ip = match obj.get("ip") {
        Some(v) => uint(v, line, "ip", u64::MAX)?,
        None => 0,
    };
    let mut args = [0u64; 6];
    if let Some(a) = obj.get("args") {
        let arr = a.as_array().ok_or(VectorError::BadField { line, field: "args", what: "an array of 6 integers" })?;
        if arr.len() != 6 {
            return Err(VectorError::BadField { line, field: "args", what: "an array of 6 integers" });
        }
        for (slot, v) in args.iter_mut().zip(arr) {
            *slot = uint(v, line, "args", u64::MAX)?;
        }
    } else {
        return Err(VectorError::Missing { line, field: "args" });
    }
    let action = match obj.get("action") {
        Some(v) => Some(uint(v, line, "action", u64::from(u32::MAX))? as u32),
        None => None,
    };
    Ok(Vector { line, data: SeccompData { nr, arch, instruction_pointer: ip, args }, action })
}

/// Parses a whole JSONL text; blank lines are skipped.
pub fn parse(text: &str) -> Result<Vec<Vector>, VectorError> {
    text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, l)| parse_line(l, i + 1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_shared_shape() {
        let v = parse_line(
            r#"{"arch": 3221225534, "nr": -1, "ip": 7, "args": [1,2,3,4,5,18446744073709551615], "action": 2147418112}"#,
            3,
        )
        .unwrap();
        assert_eq!(v.data.nr, -1);
        assert_eq!(v.data.arch, 0xc000003e);
        assert_eq!(v.data.args[5], u64::MAX);
        assert_eq!(v.action, Some(0x7fff0000));
    }

    #[test]
    fn bad_lines_name_the_line_and_field() {
        assert!(matches!(parse("\n{\"arch\": 1}"), Err(VectorError::Missing { line: 2, field: "nr" })));
        assert!(matches!(
            parse_line(r#"{"arch": -1, "nr": 0, "args": [0,0,0,0,0,0]}"#, 1),
            Err(VectorError::BadField { field: "arch", .. })
        ));
        assert!(matches!(
            parse_line(r#"{"arch": 1, "nr": 0, "args": [0,0]}"#, 1),
            Err(VectorError::BadField { field: "args", .. })
        ));
        assert!(matches!(
            parse_line(r#"{"arch": 1, "nr": 4294967296, "args": [0,0,0,0,0,0]}"#, 1),
            Err(VectorError::BadField { field: "nr", .. })
        ));
        assert!(matches!(parse_line("{", 9), Err(VectorError::Json { line: 9, .. })));
        assert!(matches!(parse_line("[1]", 9), Err(VectorError::NotObject { line: 9 })));
    }
}
