//! The arithmetic of ComfyUI's `ComfyMathExpression` node, evaluated over
//! constants at import: Python's expression syntax as its evaluator takes
//! it (`+ - * / // % **`, bit operators, comparisons, `and`/`or`/`not`,
//! `x if c else y`, and the functions `min max abs round floor ceil int
//! float sqrt pow log log2 log10`) over integers, floats and booleans, with
//! Python's rules (`/` gives a float, `//` and `%` round toward minus
//! infinity, `round` ties to even).

use std::collections::HashMap;

/// A value of an expression.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Num {
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Num {
    fn float(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
            Num::Bool(b) => f64::from(u8::from(b)),
        }
    }

    /// The integer of a non-float value.
    fn int(self) -> Option<i64> {
        match self {
            Num::Int(i) => Some(i),
            Num::Bool(b) => Some(i64::from(b)),
            Num::Float(_) => None,
        }
    }

    fn truthy(self) -> bool {
        self.float() != 0.0
    }

    /// Python's `int(x)`: toward zero.
    pub(super) fn to_int(self) -> Option<i64> {
        match self {
            Num::Float(f) if f.is_finite() && f.abs() < 9.2e18 => Some(f.trunc() as i64),
            Num::Float(_) => None,
            other => other.int(),
        }
    }

    /// Python's `float(x)`.
    pub(super) fn to_float(self) -> f64 {
        self.float()
    }

    /// Python's `bool(x)`.
    pub(super) fn to_bool(self) -> bool {
        self.truthy()
    }
}

/// Evaluates `text` with `names` bound; `None` for what it cannot
/// evaluate (a syntax it does not take, an unknown name, a division by
/// zero, an overflow).
pub(super) fn evaluate(text: &str, names: &HashMap<String, Num>) -> Option<Num> {
    let tokens = tokens(text)?;
    let mut parser = Parser {
        tokens,
        at: 0,
        depth: 0,
        names,
    };
    let value = parser.ternary()?;
    (parser.at == parser.tokens.len()).then_some(value)
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Num(Num),
    Name(String),
    Op(&'static str),
}

const OPS: &[&str] = &[
    "**", "//", "<<", ">>", "<=", ">=", "==", "!=", "+", "-", "*", "/", "%", "&", "|", "^", "~",
    "<", ">", "(", ")", ",",
];

fn tokens(text: &str) -> Option<Vec<Token>> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let c = rest.chars().next()?;
        if c.is_ascii_digit() || c == '.' {
            let end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
                .unwrap_or(rest.len());
            let digits = rest[..end].replace('_', "");
            out.push(Token::Num(match digits.contains('.') {
                true => Num::Float(digits.parse().ok()?),
                false => Num::Int(digits.parse().ok()?),
            }));
            rest = &rest[end..];
        } else if c.is_alphabetic() || c == '_' {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            out.push(Token::Name(rest[..end].to_string()));
            rest = &rest[end..];
        } else {
            let op = OPS.iter().find(|op| rest.starts_with(**op))?;
            out.push(Token::Op(op));
            rest = &rest[op.len()..];
        }
        rest = rest.trim_start();
    }
    Some(out)
}

/// How deep parentheses, calls and prefix operators may nest: a file's
/// expression deeper than that is not evaluated (it would exhaust the
/// stack).
const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    /// Nesting depth of the parse (see [`MAX_DEPTH`]).
    depth: usize,
    names: &'a HashMap<String, Num>,
}

impl Parser<'_> {
    /// Runs `parse` one level deeper, if the depth allows.
    fn nested(&mut self, parse: impl FnOnce(&mut Self) -> Option<Num>) -> Option<Num> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let value = parse(self);
        self.depth -= 1;
        value
    }

    fn peek_op(&self, op: &str) -> bool {
        matches!(self.tokens.get(self.at), Some(Token::Op(o)) if *o == op)
    }

    fn peek_word(&self, word: &str) -> bool {
        matches!(self.tokens.get(self.at), Some(Token::Name(n)) if n == word)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        let found = self.peek_op(op);
        self.at += usize::from(found);
        found
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let found = self.peek_word(word);
        self.at += usize::from(found);
        found
    }

    fn ternary(&mut self) -> Option<Num> {
        let value = self.or()?;
        if !self.eat_word("if") {
            return Some(value);
        }
        let condition = self.or()?;
        self.eat_word("else").then_some(())?;
        let other = self.nested(Self::ternary)?;
        Some(if condition.truthy() { value } else { other })
    }

    fn or(&mut self) -> Option<Num> {
        let mut value = self.and()?;
        while self.eat_word("or") {
            let right = self.and()?;
            value = if value.truthy() { value } else { right };
        }
        Some(value)
    }

    fn and(&mut self) -> Option<Num> {
        let mut value = self.not()?;
        while self.eat_word("and") {
            let right = self.not()?;
            value = if value.truthy() { right } else { value };
        }
        Some(value)
    }

    fn not(&mut self) -> Option<Num> {
        if self.eat_word("not") {
            return Some(Num::Bool(!self.nested(Self::not)?.truthy()));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Option<Num> {
        let mut left = self.binary(0)?;
        let mut result = None;
        while let Some(op) = ["<=", ">=", "==", "!=", "<", ">"]
            .into_iter()
            .find(|op| self.peek_op(op))
        {
            self.at += 1;
            let right = self.binary(0)?;
            let (a, b) = (left.float(), right.float());
            let holds = match op {
                "<=" => a <= b,
                ">=" => a >= b,
                "==" => a == b,
                "!=" => a != b,
                "<" => a < b,
                _ => a > b,
            };
            result = Some(result.unwrap_or(true) && holds);
            left = right;
        }
        Some(result.map_or(left, Num::Bool))
    }

    /// Binary operators by precedence level, lowest first.
    fn binary(&mut self, level: usize) -> Option<Num> {
        const LEVELS: &[&[&str]] = &[
            &["|"],
            &["^"],
            &["&"],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "//", "/", "%"],
        ];
        let Some(ops) = LEVELS.get(level) else {
            return self.unary();
        };
        let mut value = self.binary(level + 1)?;
        while let Some(op) = ops.iter().find(|op| self.peek_op(op)) {
            self.at += 1;
            let right = self.binary(level + 1)?;
            value = apply(op, value, right)?;
        }
        Some(value)
    }

    fn unary(&mut self) -> Option<Num> {
        if self.eat_op("-") {
            return match self.nested(Self::unary)? {
                Num::Float(f) => Some(Num::Float(-f)),
                other => other.int()?.checked_neg().map(Num::Int),
            };
        }
        if self.eat_op("+") {
            return self.nested(Self::unary);
        }
        if self.eat_op("~") {
            return Some(Num::Int(!self.nested(Self::unary)?.int()?));
        }
        self.power()
    }

    fn power(&mut self) -> Option<Num> {
        let base = self.atom()?;
        if !self.eat_op("**") {
            return Some(base);
        }
        let exponent = self.nested(Self::unary)?;
        power(base, exponent)
    }

    fn atom(&mut self) -> Option<Num> {
        match self.tokens.get(self.at).cloned()? {
            Token::Num(n) => {
                self.at += 1;
                Some(n)
            }
            Token::Op("(") => {
                self.at += 1;
                let value = self.nested(Self::ternary)?;
                self.eat_op(")").then_some(value)
            }
            Token::Name(name) => {
                self.at += 1;
                if !self.eat_op("(") {
                    return match name.as_str() {
                        "True" => Some(Num::Bool(true)),
                        "False" => Some(Num::Bool(false)),
                        _ => self.names.get(&name).copied(),
                    };
                }
                let mut args = Vec::new();
                if !self.eat_op(")") {
                    loop {
                        args.push(self.nested(Self::ternary)?);
                        if self.eat_op(")") {
                            break;
                        }
                        self.eat_op(",").then_some(())?;
                    }
                }
                call(&name, &args)
            }
            Token::Op(_) => None,
        }
    }
}

fn both_int(a: Num, b: Num) -> Option<(i64, i64)> {
    Some((a.int()?, b.int()?))
}

fn apply(op: &str, a: Num, b: Num) -> Option<Num> {
    if let Some((x, y)) = both_int(a, b) {
        return match op {
            "+" => x.checked_add(y).map(Num::Int),
            "-" => x.checked_sub(y).map(Num::Int),
            "*" => x.checked_mul(y).map(Num::Int),
            "/" => (y != 0).then(|| Num::Float(x as f64 / y as f64)),
            "//" => floor_div(x, y).map(Num::Int),
            "%" => floor_mod(x, y).map(Num::Int),
            "&" => Some(Num::Int(x & y)),
            "|" => Some(Num::Int(x | y)),
            "^" => Some(Num::Int(x ^ y)),
            "<<" => u32::try_from(y)
                .ok()
                .filter(|s| *s < 63)
                .and_then(|s| x.checked_mul(1 << s))
                .map(Num::Int),
            ">>" => u32::try_from(y).ok().map(|s| Num::Int(x >> s.min(63))),
            _ => None,
        };
    }
    let (x, y) = (a.float(), b.float());
    let value = match op {
        "+" => x + y,
        "-" => x - y,
        "*" => x * y,
        "/" if y != 0.0 => x / y,
        "//" if y != 0.0 => (x / y).floor(),
        "%" if y != 0.0 => x - y * (x / y).floor(),
        _ => return None,
    };
    value.is_finite().then_some(Num::Float(value))
}

/// Python's `//` on integers: the quotient rounded toward minus infinity
/// (`None` for a zero divisor or an overflow).
fn floor_div(x: i64, y: i64) -> Option<i64> {
    let (q, r) = (x.checked_div(y)?, x.checked_rem(y)?);
    Some(if r != 0 && (r < 0) != (y < 0) {
        q - 1
    } else {
        q
    })
}

/// Python's `%` on integers: the remainder with the divisor's sign.
fn floor_mod(x: i64, y: i64) -> Option<i64> {
    let r = x.checked_rem(y)?;
    Some(if r != 0 && (r < 0) != (y < 0) {
        r + y
    } else {
        r
    })
}

fn power(base: Num, exponent: Num) -> Option<Num> {
    if let Some((b, e)) = both_int(base, exponent)
        && let Ok(e) = u32::try_from(e)
    {
        return b.checked_pow(e).map(Num::Int);
    }
    let value = base.float().powf(exponent.float());
    value.is_finite().then_some(Num::Float(value))
}

fn call(name: &str, args: &[Num]) -> Option<Num> {
    let one = || (args.len() == 1).then(|| args[0]);
    let float = |f: f64| f.is_finite().then_some(Num::Float(f));
    match name {
        "min" | "max" if !args.is_empty() => args.iter().copied().reduce(|a, b| {
            let pick_b = if name == "min" {
                b.float() < a.float()
            } else {
                b.float() > a.float()
            };
            if pick_b { b } else { a }
        }),
        "abs" => match one()? {
            Num::Float(f) => float(f.abs()),
            other => other.int()?.checked_abs().map(Num::Int),
        },
        "round" if args.len() == 2 => {
            let scale = 10f64.powi(i32::try_from(args[1].int()?).ok()?);
            float((args[0].float() * scale).round_ties_even() / scale)
        }
        "round" => whole(one()?.float().round_ties_even()),
        "floor" => whole(one()?.float().floor()),
        "ceil" => whole(one()?.float().ceil()),
        "int" => one()?.to_int().map(Num::Int),
        "float" => float(one()?.float()),
        "sqrt" => float(one()?.float().sqrt()),
        "log2" => float(one()?.float().log2()),
        "log10" => float(one()?.float().log10()),
        "log" => float(one()?.float().ln()),
        "pow" if args.len() == 2 => power(args[0], args[1]),
        _ => None,
    }
}

/// A whole float as Python's integer.
fn whole(f: f64) -> Option<Num> {
    (f.is_finite() && f.abs() < 9.0e18).then_some(Num::Int(f as i64))
}

#[cfg(test)]
mod tests {
    use super::{Num, evaluate};
    use std::collections::HashMap;

    fn eval(text: &str, a: Num, b: Num) -> Option<Num> {
        let names = HashMap::from([("a".to_string(), a), ("b".to_string(), b)]);
        evaluate(text, &names)
    }

    #[test]
    fn the_templates_expressions_evaluate_as_python_does() {
        use Num::{Bool, Float, Int};
        let cases: &[(&str, Num, Num, Num)] = &[
            ("a/2", Int(1024), Int(0), Float(512.0)),
            ("a * b + 1", Int(3), Float(0.5), Float(2.5)),
            (
                "max(((a + 15) // 16) * 16, 256)",
                Int(1000),
                Int(0),
                Int(1008),
            ),
            ("(a // 32) * 32", Int(-33), Int(0), Int(-64)),
            ("a % b if b > 0 else 0", Int(-7), Int(3), Int(2)),
            ("b if b > 0 else a", Int(5), Int(0), Int(5)),
            ("a & -8", Int(1023), Int(0), Int(1016)),
            ("a & ~1", Int(7), Int(0), Int(6)),
            ("a > 2048", Int(4096), Int(0), Bool(true)),
            ("round (a * 24)", Float(2.5 / 24.0), Int(0), Int(2)),
            (
                "max(5, round(a * 24)) + (5 - (max(5, round(a * 24)) % 17)) % 17",
                Float(5.0),
                Int(0),
                Int(124),
            ),
            (
                "ceil(1.5 * log2(max(a, b))) + 2",
                Int(1024),
                Int(512),
                Int(17),
            ),
            (
                "(a % 4 == 1) and ((b - 1) % 4 == 0)",
                Int(81),
                Int(5),
                Bool(true),
            ),
            ("floor((a - 2) / (b - 1))", Int(10), Int(3), Int(4)),
            ("2 ** 10 - a", Int(24), Int(0), Int(1000)),
            ("-a // 2", Int(7), Int(0), Int(-4)),
        ];
        for (text, a, b, want) in cases {
            assert_eq!(eval(text, *a, *b), Some(*want), "{text}");
        }
    }

    #[test]
    fn what_it_cannot_evaluate_is_none() {
        for text in ["a / 0", "c + 1", "a +", "import os", "a.b", "max()", "(a"] {
            assert_eq!(eval(text, Num::Int(1), Num::Int(0)), None, "{text}");
        }
        // Nesting past the limit is refused, not a stack overflow.
        let deep = format!("{}a{}", "(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(eval(&deep, Num::Int(1), Num::Int(0)), None);
        let negated = format!("{}a", "-".repeat(100_000));
        assert_eq!(eval(&negated, Num::Int(1), Num::Int(0)), None);
        // Integer edges are None, never a panic or a wrapped value.
        for text in [
            "(-9223372036854775807 - 1) // -1",
            "(-9223372036854775807 - 1) % -1",
            "1 << 63",
            "9223372036854775807 + 1",
            "int(1e30)",
        ] {
            assert_eq!(eval(text, Num::Int(1), Num::Int(0)), None, "{text}");
        }
        let shallow = format!("{}a{}", "(".repeat(20), ")".repeat(20));
        assert_eq!(eval(&shallow, Num::Int(1), Num::Int(0)), Some(Num::Int(1)));
    }
}
