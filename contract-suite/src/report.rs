//! Cases, their outcomes and the two renderings of a run: the readable
//! report (ending in the `N passed, N failed` line) and JUnit XML.

use std::time::Duration;

/// How binding a clause is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// The contract requires it.
    Must,
    /// The contract recommends it.
    Should,
}

impl Level {
    /// `MUST` or `SHOULD`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        }
    }
}

/// One executed case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// Stable id, e.g. `failure.create.lost-response.3`.
    pub id: String,
    /// The contract clause it checks, e.g. `failure-matrix`.
    pub clause: &'static str,
    /// How binding the clause is.
    pub level: Level,
    /// One sentence: what must hold.
    pub sentence: String,
    /// `None` when it held; otherwise what was observed instead.
    pub failure: Option<String>,
    /// Why the case could not judge anything (it neither held nor failed),
    /// e.g. a leak check in a run that created nothing.
    pub not_run: Option<String>,
    /// How long it took.
    pub duration: Duration,
}

/// All results of a run, in execution order.
#[derive(Debug, Default)]
pub struct Report {
    /// The results.
    pub cases: Vec<CaseResult>,
}

impl Report {
    /// Cases that held.
    pub fn passed(&self) -> usize {
        self.cases
            .iter()
            .filter(|case| case.failure.is_none() && case.not_run.is_none())
            .count()
    }

    /// Cases that did not hold.
    pub fn failed(&self) -> usize {
        self.failures().count()
    }

    /// Cases that could not judge anything.
    pub fn not_run(&self) -> impl Iterator<Item = &CaseResult> {
        self.cases.iter().filter(|case| case.not_run.is_some())
    }

    /// The failed cases.
    pub fn failures(&self) -> impl Iterator<Item = &CaseResult> {
        self.cases.iter().filter(|case| case.failure.is_some())
    }

    /// The readable report: failures with their clause and observation,
    /// then the summary line.
    pub fn render(&self, component: &str) -> String {
        let mut text = format!(
            "contract suite for {component}: {} cases\n",
            self.cases.len()
        );
        for case in self.failures() {
            text.push_str(&format!(
                "FAILED {} [{} {}] {}\n  observed: {}\n",
                case.id,
                case.level.as_str(),
                case.clause,
                case.sentence,
                case.failure.as_deref().unwrap_or_default()
            ));
        }
        for case in self.not_run() {
            text.push_str(&format!(
                "NOT RUN {} [{}] {}\n",
                case.id,
                case.clause,
                case.not_run.as_deref().unwrap_or_default()
            ));
        }
        let not_run = self.not_run().count();
        let tail = if not_run > 0 {
            format!(", {not_run} not run")
        } else {
            String::new()
        };
        text.push_str(&format!(
            "{} passed, {} failed{tail}\n",
            self.passed(),
            self.failed()
        ));
        text
    }

    /// JUnit XML: one `testsuite` per clause, one `testcase` per case.
    pub fn junit(&self, component: &str) -> String {
        let mut clauses: Vec<&'static str> = Vec::new();
        for case in &self.cases {
            if !clauses.contains(&case.clause) {
                clauses.push(case.clause);
            }
        }
        let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        xml.push_str(&format!(
            "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\">\n",
            escape(&format!("contract-suite {component}")),
            self.cases.len(),
            self.failed()
        ));
        for clause in clauses {
            let cases: Vec<&CaseResult> = self
                .cases
                .iter()
                .filter(|case| case.clause == clause)
                .collect();
            let failures = cases.iter().filter(|case| case.failure.is_some()).count();
            let time: f64 = cases.iter().map(|case| case.duration.as_secs_f64()).sum();
            xml.push_str(&format!(
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" time=\"{time:.3}\">\n",
                escape(clause),
                cases.len()
            ));
            for case in cases {
                xml.push_str(&format!(
                    "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\">\n      <properties><property name=\"level\" value=\"{}\"/><property name=\"clause\" value=\"{}\"/><property name=\"sentence\" value=\"{}\"/></properties>\n",
                    escape(clause),
                    escape(&case.id),
                    case.duration.as_secs_f64(),
                    case.level.as_str(),
                    escape(clause),
                    escape(&case.sentence)
                ));
                if let Some(why) = &case.not_run {
                    xml.push_str(&format!("      <skipped message=\"{}\"/>\n", escape(why)));
                }
                if let Some(observed) = &case.failure {
                    xml.push_str(&format!(
                        "      <failure message=\"{}\">{}</failure>\n",
                        escape(&case.sentence),
                        escape(observed)
                    ));
                }
                xml.push_str("    </testcase>\n");
            }
            xml.push_str("  </testsuite>\n");
        }
        xml.push_str("</testsuites>\n");
        xml
    }
}

/// Escapes text for XML attributes and content, after replacing the control
/// characters XML 1.0 cannot carry.
fn escape(text: &str) -> String {
    let printable: String = text
        .chars()
        .map(|c| {
            if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') {
                '?'
            } else {
                c
            }
        })
        .collect();
    quick_xml::escape::escape(printable.as_str()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_keeps_xml_well_formed() {
        assert_eq!(escape("a<b>&\"c'\u{1}"), "a&lt;b&gt;&amp;&quot;c&apos;?");
    }

    #[test]
    fn junit_output_parses_as_xml_and_names_each_clause() {
        let report = Report {
            cases: vec![
                CaseResult {
                    id: "a.1".into(),
                    clause: "declaration",
                    level: Level::Must,
                    sentence: "x < y & \"z\"".into(),
                    failure: None,
                    not_run: None,
                    duration: Duration::from_millis(3),
                },
                CaseResult {
                    id: "b.1".into(),
                    clause: "commands",
                    level: Level::Should,
                    sentence: "s".into(),
                    failure: Some("saw <\u{7}> bytes".into()),
                    not_run: None,
                    duration: Duration::ZERO,
                },
            ],
        };
        let xml = report.junit("c.wasm");
        let mut reader = quick_xml::Reader::from_str(&xml);
        let mut suites = Vec::new();
        loop {
            match reader.read_event().expect("well-formed XML") {
                quick_xml::events::Event::Eof => break,
                quick_xml::events::Event::Start(tag) if tag.name().as_ref() == "testsuite" => {
                    let name = tag.try_get_attribute("name").expect("attr").expect("name");
                    suites.push(name.value.to_string());
                }
                _ => {}
            }
        }
        assert_eq!(suites, ["declaration", "commands"]);
        assert!(report.render("c.wasm").ends_with("1 passed, 1 failed\n"));
    }
}
