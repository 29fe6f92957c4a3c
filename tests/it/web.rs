//! The web page's address: what each parameter opens, and a clear message for a bad one.

use kafkascope::view::palette::Theme;
use kafkascope::web::{Page, parse_query, query_of};

fn view(query: &str) -> kafkascope::app::Options {
    match parse_query(query) {
        Ok(Page::View(options)) => *options,
        other => panic!("{query}: expected the window, got {other:?}"),
    }
}

fn error(query: &str) -> String {
    match parse_query(query) {
        Err(message) => message,
        Ok(page) => panic!("{query}: expected an error, got {page:?}"),
    }
}

#[test]
fn no_parameters_open_the_walkthrough_as_the_command_line_does() {
    let options = view("");
    let front = kafkascope::app::Options::front_door().unwrap();
    let tour = options.tour.as_ref().expect("the walkthrough");
    assert_eq!(tour.tour.name, "walkthrough");
    assert_eq!((tour.beat, tour.at_end), (0, false));
    assert_eq!(options.scenario.name, crate::built_in("walkthrough").name);
    assert_eq!(options.at_ms, tour.tour.beats[0].from_ms);
    assert_eq!(options.at_ms, front.at_ms);
    assert_eq!(options.theme, Theme::Dark);
    // Paused on the Start button.
    assert!(options.paused && !options.talk);
}

#[test]
fn a_tour_link_opens_its_beat() {
    let options = view("tour=walkthrough&beat=5&theme=light&talk=1");
    let tour = options.tour.as_ref().unwrap();
    assert_eq!(tour.beat, 4);
    assert_eq!(options.at_ms, tour.tour.beats[4].from_ms);
    assert_eq!(options.theme, Theme::Light);
    assert!(options.talk && options.paused);
    assert_eq!(view("tour=walkthrough").tour.unwrap().beat, 0);
    // A look alone opens the walkthrough in that look; a scenario's settings, the sandbox.
    assert_eq!(view("theme=light").tour.unwrap().tour.name, "walkthrough");
    assert!(view("paused=1").tour.is_none());
    // The sandbox is a scenario's link.
    assert!(view("scenario=quickstart").tour.is_none());
}

#[test]
fn every_view_parameter_takes_effect() {
    let options = view(
        "scenario=clean-failover&at_ms=20000&theme=light&speed=0.5&paused=1&text_scale=1.5&seed=9",
    );
    assert_eq!(
        options.scenario.name,
        crate::built_in("clean-failover").name
    );
    assert_eq!(options.at_ms, 20_000);
    assert_eq!(options.theme, Theme::Light);
    assert_eq!(options.speed, 0.5);
    assert!(options.paused);
    assert_eq!(options.text_scale, 1.5);
    assert_eq!(options.scenario.seed, 9);
    assert!(!view("paused=0").paused);
    assert!(view("paused").paused);
}

#[test]
fn a_url_gives_its_query_without_the_fragment() {
    assert_eq!(
        query_of("https://example.org/k/?scenario=isr-shrink&at_ms=5#top"),
        "scenario=isr-shrink&at_ms=5"
    );
    assert_eq!(query_of("http://127.0.0.1:8000/"), "");
    assert_eq!(query_of("http://127.0.0.1:8000/#a?b"), "");
    // Form encoding is undone: %2D is '-'.
    assert_eq!(
        view("scenario=isr%2Dshrink").scenario.name,
        crate::built_in("isr-shrink").name
    );
}

#[test]
fn report_asks_for_a_headless_run() {
    match parse_query("report=1&scenario=min-isr&until_ms=5000&seed=3") {
        Ok(Page::Report { scenario, until_ms }) => {
            assert_eq!(scenario.name, crate::built_in("min-isr").name);
            assert_eq!(scenario.seed, 3);
            assert_eq!(until_ms, Some(5000));
        }
        other => panic!("expected a report, got {other:?}"),
    }
}

#[test]
fn bad_parameters_say_what_is_wrong() {
    for (query, says) in [
        ("scenario=nope", "scenario=\"nope\""),
        ("at_ms=-5", "at_ms=\"-5\": expected a whole number"),
        ("at_ms=99999999", "past the end of scenario"),
        ("theme=blue", "expected dark or light"),
        ("speed=0", "expected a number from 0.001 to 100"),
        ("speed=fast", "expected a number from 0.001 to 100"),
        ("text_scale=5", "expected a number from 0.75 to 2"),
        ("paused=yes", "expected 1 or 0"),
        ("at=5000", "unknown parameter \"at\""),
        ("theme=dark&theme=light", "given twice"),
        ("until_ms=5", "until_ms is for report=1"),
        ("report=1&theme=light", "theme sets how the window opens"),
        ("scenario=%zz", "two hex digits"),
        ("scenario=%ff", "not UTF-8"),
        ("tour=nope", "tour=\"nope\""),
        (
            "tour=walkthrough&beat=9",
            "beat=\"9\": 9: tour \"walkthrough\" has beats 1 to 8",
        ),
        ("tour=walkthrough&beat=zero", "expected a beat number"),
        ("tour=walkthrough&at_ms=5", "at_ms is for a scenario"),
        ("scenario=quickstart&beat=2", "beat is a tour's"),
        ("talk=maybe", "expected 1 or 0"),
    ] {
        let message = error(query);
        assert!(
            message.contains(says),
            "{query}: {message:?} lacks {says:?}"
        );
    }
}

#[test]
fn the_address_bar_link_opens_what_is_shown() {
    use kafkascope::app::link::Link;
    let link = Link {
        tour: None,
        scenario: "isr-shrink".into(),
        seed: Some(11),
        at_ms: Some(31_250),
        theme: Theme::Light,
        speed: 0.5,
        paused: true,
        text_scale: 1.25,
        talk: false,
        presenter: false,
    };
    assert_eq!(
        link.query(),
        "scenario=isr-shrink&seed=11&at_ms=31250&theme=light&speed=0.5&paused=1&text_scale=1.25"
    );
    let options = view(&link.query());
    assert_eq!(options.scenario.name, crate::built_in("isr-shrink").name);
    assert_eq!(
        (
            options.scenario.seed,
            options.at_ms,
            options.theme,
            options.speed,
            options.paused
        ),
        (11, 31_250, Theme::Light, 0.5, true)
    );
    assert_eq!(options.text_scale, 1.25);

    // Defaults are left out: a playing link at the default look names only the scenario.
    let plain = Link {
        tour: None,
        scenario: "quickstart".into(),
        seed: None,
        at_ms: None,
        theme: Theme::Dark,
        speed: kafkascope::app::Options::DEFAULT_SPEED,
        paused: false,
        text_scale: 1.0,
        talk: false,
        presenter: true,
    };
    // The notes view is a tour's: a scenario's link leaves it out.
    assert_eq!(plain.query(), "scenario=quickstart");

    // A tour's link names the tour and the beat on screen, and the look.
    let beat = Link {
        tour: Some(("walkthrough".into(), 2)),
        talk: true,
        ..plain
    };
    assert_eq!(beat.query(), "tour=walkthrough&beat=3&talk=1&presenter=1");
    let options = view(&beat.query());
    assert_eq!(options.tour.unwrap().beat, 2);
    assert!(options.talk);
    assert!(options.presenter);
    let stage = Link {
        presenter: false,
        ..beat
    };
    assert!(!view(&stage.query()).presenter);
}

#[test]
fn the_pages_of_a_talk_tell_each_other_their_steps_and_blanking() {
    use kafkascope::app::link::{blank_message, message_blank, message_step, step_message};
    use kafkascope::view::tour::{Blank, Step};
    for step in [
        Step::Next,
        Step::Previous,
        Step::First,
        Step::Last,
        Step::Replay,
        Step::Go(0),
        Step::Go(6),
    ] {
        let (name, beat) = step_message(step);
        assert_eq!(message_step(name, beat.map(|b| b as f64)), Some(step));
    }
    assert_eq!(step_message(Step::Go(6)), ("go", Some(7)));
    assert_eq!(message_step("go", None), None);
    assert_eq!(message_step("go", Some(0.0)), None);
    assert_eq!(message_step("go", Some(2.5)), None);
    assert_eq!(message_step("sideways", None), None);
    for blank in [Blank::Shown, Blank::Black, Blank::White] {
        assert_eq!(message_blank(blank_message(blank)), Some(blank));
    }
    assert_eq!(message_blank("grey"), None);
}

#[test]
fn a_deck_asks_for_a_beat_by_fragment_or_message() {
    use kafkascope::app::link::{fragment_beat, message_beat};
    assert_eq!(fragment_beat("#beat=3"), Some(3));
    assert_eq!(fragment_beat("beat=12"), Some(12));
    for no in [
        "",
        "#",
        "#beat=",
        "#beat=0",
        "#beat=-1",
        "#beat=2x",
        "#top",
        "#beat=1.5",
    ] {
        assert_eq!(fragment_beat(no), None, "{no:?}");
    }
    assert_eq!(message_beat(5.0), Some(5));
    for no in [0.0, -2.0, 2.5, f64::NAN, f64::INFINITY, 1e9] {
        assert_eq!(message_beat(no), None, "{no}");
    }
}
