// Drives the web build in headless Chromium (Debian's, through playwright-core).
//
//   node browser.mjs test BASE_URL NATIVE_BINARY OUT_DIR
//     The page opens what its address says, draws, takes keys, and its reports equal the
//     native command line's, byte for byte. Writes screenshots and reports into OUT_DIR.
//   node browser.mjs bench BASE_URL [RUNS] [NATIVE_BINARY]
//     Time from navigation to the first frame drawn, fresh cache each time; then the model's
//     speed in the page (a report=1 run of throughput), beside the native binary's when given.
//
// The app tells the page what it shows on its canvas: data-scenario, data-sim-ms, data-frames,
// and in a tour data-tour, data-beat (from 1) and data-stage (ready, playing, ended, finished).

import { chromium } from 'playwright-core';
import { writeFileSync, mkdirSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

const [mode, base, ...rest] = process.argv.slice(2);
const FRAME_TIMEOUT = 300_000;
// Runs whose reports must match: a healthy cluster with a consumer group, and an unclean
// election that loses acknowledged records (the report lists each one).
const REPORTS = [['quickstart', 20_000], ['unclean-election', null]]; // SwiftShader draws a few frames a second; a cold CI machine is slow.

async function launch(extraArgs = []) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--enable-unsafe-swiftshader', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
      ...extraArgs],
  });
}

/** A fresh page (empty cache) that records console errors and uncaught exceptions. */
async function newPage(browser) {
  // On a browser launched with its own screen density, the viewport is the window's, unemulated
  // (emulating a density leaves the canvas's device-pixel box unscaled).
  const context = await browser.newContext(
    browser.ownDensity ? { viewport: null } : { viewport: { width: 1280, height: 720 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  page.errors = [];
  page.on('console', (m) => { if (m.type() === 'error') page.errors.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => page.errors.push(`exception: ${e.message}`));
  return page;
}

async function waitFrames(page, n) { // page: a page or a frame
  await page.waitForFunction(
    (n) => Number(document.getElementById('kafkascope').dataset.frames ?? 0) >= n,
    n, { timeout: FRAME_TIMEOUT, polling: 10 });
}

const canvasData = (page, key) =>
  page.evaluate((key) => document.getElementById('kafkascope').dataset[key], key);
const simMs = async (page) => Number(await canvasData(page, 'simMs'));

/** What the canvas shows: how many distinct colours, and how light it is on average (0 to 255). */
async function pixels(page, png) {
  return page.evaluate(async (b64) => {
    const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
    const bitmap = await createImageBitmap(blob);
    const c = new OffscreenCanvas(bitmap.width, bitmap.height);
    const g = c.getContext('2d');
    g.drawImage(bitmap, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    const colours = new Set();
    let light = 0;
    for (let i = 0; i < d.length; i += 4) {
      colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
      light += 0.2126 * d[i] + 0.7152 * d[i + 1] + 0.0722 * d[i + 2];
    }
    return { colours: colours.size, light: light / (d.length / 4) };
  }, png.toString('base64'));
}

function check(ok, message) {
  if (!ok) throw new Error(message);
  console.log(`ok: ${message}`);
}

async function test(base, native, outDir) {
  mkdirSync(outDir, { recursive: true });
  const browser = await launch();
  try {
    // A link to a scenario, an instant and a look.
    const page = await newPage(browser);
    await page.goto(`${base}/?scenario=clean-failover&at_ms=20000&theme=light&paused=1`);
    await waitFrames(page, 5);
    check(await page.title() === 'Kafkascope: clean-failover', `the tab names the linked scenario (${await page.title()})`);
    check(await canvasData(page, 'scenario') === 'clean-failover', 'the app shows the linked scenario');
    const at = await simMs(page);
    check(at >= 19_999 && at <= 20_000, `it opens at the linked instant (${at} ms)`);
    await page.waitForTimeout(1500);
    check(await simMs(page) === at, 'paused=1 holds the playhead');
    const address = () => page.evaluate(() => location.search);
    check(await address() === '?scenario=clean-failover&at_ms=20000&theme=light&paused=1',
      `the address bar links to what is shown (${await address()})`);
    const shot = await page.locator('#kafkascope').screenshot();
    writeFileSync(`${outDir}/web-clean-failover-light.png`, shot);
    const light = await pixels(page, shot);
    check(light.colours >= 50, `the canvas is drawn (${light.colours} colours)`);
    check(light.light > 150, `theme=light draws light (mean ${light.light.toFixed(0)})`);
    // The keyboard works once the page has loaded: space plays.
    await page.keyboard.press('Space');
    await page.waitForFunction((at) => Number(document.getElementById('kafkascope').dataset.simMs) > at,
      at, { timeout: 60_000 });
    check(true, 'space starts playback');
    await page.waitForFunction(() => location.search === '?scenario=clean-failover&theme=light',
      null, { timeout: 30_000 });
    check(true, 'playing, the address bar drops the instant and the pause');
    check(page.errors.length === 0, `no console errors (${page.errors.join('; ')})`);
    await page.context().close();

    // A beat's link: the tour opens at that beat, paused at its start, and the address bar
    // follows the reader from beat to beat.
    const tour = await newPage(browser);
    await tour.goto(`${base}/?tour=walkthrough&beat=5&theme=light`);
    await waitFrames(tour, 5);
    check(await canvasData(tour, 'tour') === 'walkthrough', 'a beat link opens its tour');
    check(await canvasData(tour, 'beat') === '5' && await canvasData(tour, 'stage') === 'ready',
      `at the linked beat, ready (${await canvasData(tour, 'beat')}, ${await canvasData(tour, 'stage')})`);
    check(await canvasData(tour, 'scenario') === 'walkthrough', 'on the tour\'s scenario');
    const beat5 = await simMs(tour);
    check(beat5 === 20_999, `at the beat's start, 21 s (${beat5} ms drawn)`);
    const beatShot = await tour.locator('#kafkascope').screenshot();
    writeFileSync(`${outDir}/web-walkthrough-beat-5-light.png`, beatShot);
    const beatLook = await pixels(tour, beatShot);
    check(beatLook.colours >= 50 && beatLook.light > 150,
      `the beat is drawn, in the light theme (${beatLook.colours} colours, mean ${beatLook.light.toFixed(0)})`);
    await tour.keyboard.press('Space');
    await tour.waitForFunction(() => document.getElementById('kafkascope').dataset.stage === 'playing',
      null, { timeout: 60_000 });
    await tour.waitForFunction((at) => Number(document.getElementById('kafkascope').dataset.simMs) > at,
      beat5, { timeout: 60_000 });
    check(true, 'space plays the beat');
    // Beat 5 holds at the fencing: playback pauses there, and the clicker's next key goes on.
    await tour.waitForFunction(() => document.getElementById('kafkascope').dataset.stage.startsWith('held'),
      null, { timeout: 120_000 });
    const heldAt = await simMs(tour);
    await tour.waitForTimeout(500);
    check(await simMs(tour) === heldAt && heldAt > beat5, `held at the fencing, ${heldAt} ms, and paused there`);
    await tour.keyboard.press('PageDown');
    await tour.waitForFunction((at) => Number(document.getElementById('kafkascope').dataset.simMs) > at,
      heldAt, { timeout: 60_000 });
    check(true, 'the clicker\'s next key (PageDown) goes on from the hold');
    await tour.keyboard.press('End');
    await tour.waitForFunction(() => document.getElementById('kafkascope').dataset.beat === '8',
      null, { timeout: 60_000 });
    await tour.waitForFunction(() => location.search === '?tour=walkthrough&beat=8&theme=light',
      null, { timeout: 30_000 });
    check(true, 'End goes to the last beat, and the address bar links to it');
    check(tour.errors.length === 0, `no console errors (${tour.errors.join('; ')})`);
    await tour.context().close();

    // A slide deck drives the page: docs/deck/index.html as the README gives it, with reveal.js
    // served from this test's npm install and the iframe pointed at this server.
    await deckDrivesThePage(browser, base, outDir);
    await notesKeepTheStageInStep(browser, base, outDir);

    // No parameters, embedded in another page's iframe on a high-density screen: the walkthrough
    // at beat 1, dark, paused on its Start button, drawn at the device's pixel ratio.
    const hiDpi = await launch(['--force-device-scale-factor=2', '--window-size=1280,720']);
    hiDpi.ownDensity = true;
    const plain = await newPage(hiDpi);
    await plain.setContent(`<body style="margin:0;background:#888"><p>A post about Kafka.</p>
      <iframe src="${base}/" style="width:800px;height:450px;border:0"></iframe></body>`);
    const frame = await (await plain.waitForSelector('iframe')).contentFrame();
    await waitFrames(frame, 5);
    check(await canvasData(frame, 'tour') === 'walkthrough' && await canvasData(frame, 'beat') === '1'
      && await canvasData(frame, 'stage') === 'ready',
      'without parameters, in an iframe, it opens the walkthrough at beat 1, on Start');
    const size = await frame.evaluate(() => {
      const c = document.getElementById('kafkascope');
      return [c.width, c.height, c.clientWidth, c.clientHeight];
    });
    check(size[0] === 1600 && size[1] === 900 && size[2] === 800 && size[3] === 450,
      `the canvas fills the iframe at the pixel ratio (${size[0]}x${size[1]} pixels for ${size[2]}x${size[3]} CSS pixels)`);
    await plain.evaluate(() => { document.querySelector('iframe').style.width = '600px'; });
    await frame.waitForFunction(() => document.getElementById('kafkascope').width === 1200,
      null, { timeout: 60_000 });
    check(true, 'the canvas follows its container when it is resized (1200 pixels for 600)');
    const start = await simMs(frame);
    await frame.locator('#kafkascope').focus();
    await plain.keyboard.press('Space');
    await frame.waitForFunction((s) => Number(document.getElementById('kafkascope').dataset.simMs) > s,
      start, { timeout: 60_000 });
    check(true, 'space starts the walkthrough');
    const darkShot = await plain.locator('iframe').screenshot();
    writeFileSync(`${outDir}/web-walkthrough-dark.png`, darkShot);
    const dark = await pixels(plain, darkShot);
    check(dark.colours >= 50 && dark.light < 100, `the dark theme is dark (${dark.colours} colours, mean ${dark.light.toFixed(0)})`);
    // The browser refuses autofocus inside a cross-origin iframe until the reader clicks, and says
    // so on the console: egui's hidden text input asks for it. That refusal is the embed working.
    const errors = plain.errors.filter((e) => !e.includes('Blocked autofocusing on a <input> element in a cross-origin subframe'));
    check(errors.length === 0, `no console errors (${errors.join('; ')})`);
    await hiDpi.close();

    // The same model: the browser's reports equal the native ones.
    for (const [scenario, until] of REPORTS) {
      const args = ['run', scenario, ...(until ? ['--until-ms', String(until)] : [])];
      const expected = execFileSync(native, args, { encoding: 'utf8', maxBuffer: 1 << 28 }).trimEnd();
      const report = await newPage(browser);
      await report.goto(`${base}/?report=1&scenario=${scenario}${until ? `&until_ms=${until}` : ''}`);
      await report.waitForSelector('#report:not([hidden])', { timeout: FRAME_TIMEOUT });
      const web = (await report.textContent('#report')).trimEnd();
      writeFileSync(`${outDir}/report-${scenario}-web.json`, `${web}\n`);
      writeFileSync(`${outDir}/report-${scenario}-native.json`, `${expected}\n`);
      check(expected.length > 1000 && web === expected,
        `${scenario}: the browser's report equals the native one (${web.length} bytes)`);
      check(report.errors.length === 0, `no console errors (${report.errors.join('; ')})`);
      await report.context().close();
    }

    // A lab's link opens it, its two runs side by side.
    const lab = await newPage(browser);
    await lab.goto(`${base}/?tour=lab-acks-all&beat=4`);
    await waitFrames(lab, 3);
    check(await canvasData(lab, 'tour') === 'lab-acks-all' && await canvasData(lab, 'beat') === '4',
      'a lab\'s link opens the lab at its beat');
    const labShot = await lab.locator('#kafkascope').screenshot({ path: `${outDir}/lab.png` });
    const labLook = await pixels(lab, labShot);
    check(labLook.colours >= 50, `the lab is drawn (${labLook.colours} colours)`);
    check(lab.errors.length === 0, `no console errors (${lab.errors.join('; ')})`);
    await lab.context().close();

    // Open reads a picked scenario file: the page's hidden input takes it, and the app runs it.
    const open = await newPage(browser);
    await open.goto(`${base}/?scenario=quickstart&paused=1`);
    await waitFrames(open, 3);
    const picked = '(name: "picked-file", duration_ms: 5000, cluster: (brokers: 2),\n' +
      ' topics: [(name: "t", partitions: 1, replication_factor: 2)],\n' +
      ' producers: [(name: "p", topic: "t", records_per_sec: 10)])\n';
    await open.setInputFiles('#kafkascope-open',
      { name: 'picked.ron', mimeType: 'text/plain', buffer: Buffer.from(picked) });
    await open.waitForFunction(
      () => document.getElementById('kafkascope').dataset.scenario === 'picked-file',
      null, { timeout: FRAME_TIMEOUT, polling: 50 });
    check(true, 'Open runs a picked scenario file');
    check(open.errors.length === 0, `no console errors (${open.errors.join('; ')})`);
    await open.context().close();

    // A mistyped link says what is wrong.
    const bad = await newPage(browser);
    await bad.goto(`${base}/?scenario=quickstart&at=5000`);
    await bad.waitForSelector('#message:not([hidden])', { timeout: FRAME_TIMEOUT });
    const message = await bad.textContent('#message');
    check(message.includes('unknown parameter "at"'), `a bad parameter is named on the page (${message})`);
    await bad.context().close();
  } finally {
    await browser.close();
  }
}

/** The README's reveal.js deck moves the embedded page beat by beat, and follows it back. */
async function deckDrivesThePage(browser, base, outDir) {
  const revealDir = new URL('./node_modules/reveal.js/', import.meta.url);
  const installed = JSON.parse(readFileSync(new URL('package.json', revealDir))).version;
  let deck = readFileSync(new URL('../../docs/deck/index.html', import.meta.url), 'utf8');
  const cdn = `https://cdn.jsdelivr.net/npm/reveal.js@${installed}/`;
  check(deck.includes(cdn), `the deck loads the reveal.js the test installs (${installed})`);
  deck = deck.replace('http://127.0.0.1:8000/?tour=walkthrough&amp;talk=1', `${base}/?tour=walkthrough&amp;talk=1`);
  const page = await newPage(browser);
  await page.route(`${cdn}**`, (route) => route.fulfill({
    path: new URL(route.request().url().slice(cdn.length), revealDir).pathname,
  }));
  await page.setContent(deck);
  const frame = await (await page.waitForSelector('iframe')).contentFrame();
  await waitFrames(frame, 3);
  const beat = () => canvasData(frame, 'beat');
  const waitBeat = (n) => frame.waitForFunction(
    (n) => document.getElementById('kafkascope').dataset.beat === n, String(n), { timeout: 120_000 });
  check(await beat() === '1', 'the embedded walkthrough opens at beat 1');
  // The clicker moves the deck: to the demo slide, then a fragment a beat.
  await page.evaluate(() => Reveal.next());
  check(await page.evaluate(() => Reveal.getIndices().h) === 1, 'the deck is on the demo slide');
  for (const n of [2, 3, 4]) {
    await page.evaluate(() => Reveal.next());
    await waitBeat(n);
    check(true, `the deck's next fragment moves the page to beat ${n}`);
  }
  await page.evaluate(() => Reveal.prev());
  await waitBeat(3);
  check(true, 'the deck\'s previous fragment moves the page back to beat 3');
  await page.keyboard.press('ArrowRight');
  await waitBeat(4);
  check(true, 'the clicker\'s key in the deck moves the page to beat 4');
  // The page tells the deck its own changes: a #beat fragment (or a reader's key) moves the
  // page, and the deck shows that beat's fragment.
  await frame.evaluate(() => { location.hash = '#beat=6'; });
  await waitBeat(6);
  await page.waitForFunction(() => Reveal.getIndices().f === 4, null, { timeout: 60_000 });
  check(true, '#beat=6 moves the page, and the deck follows to its fragment');
  await frame.locator('#kafkascope').focus();
  await frame.locator('#kafkascope').press('End');
  await waitBeat(8);
  await page.waitForFunction(() => Reveal.getIndices().f === 6, null, { timeout: 60_000 });
  check(true, 'a key in the page moves it to beat 8, and the deck follows');
  await page.screenshot({ path: `${outDir}/deck.png` });
  const errors = page.errors.filter((e) => !e.includes('Blocked autofocusing'));
  check(errors.length === 0, `no console errors (${errors.join('; ')})`);
  await page.context().close();
}

/** The speaker's notes page (presenter=1) and the stage's page, open side by side in one
 * browser, keep in step through their BroadcastChannel: a step or a blank on either shows on
 * the other. */
async function notesKeepTheStageInStep(browser, base, outDir) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 }, deviceScaleFactor: 1 });
  const open = async (query) => {
    const page = await context.newPage();
    page.errors = [];
    page.on('pageerror', (e) => page.errors.push(`exception: ${e.message}`));
    await page.goto(`${base}/?${query}`);
    await waitFrames(page, 3);
    await page.locator('#kafkascope').focus();
    return page;
  };
  const stage = await open('tour=walkthrough&talk=1');
  const notes = await open('tour=walkthrough&presenter=1');
  check(await canvasData(notes, 'presenter') === '1', 'presenter=1 opens the notes view');
  check(await canvasData(stage, 'presenter') === '', 'the stage page shows the stage');
  const waitData = (page, key, value) => page.waitForFunction(
    ([key, value]) => document.getElementById('kafkascope').dataset[key] === value,
    [key, value], { timeout: 120_000 });
  // Next on the notes starts beat 1 on both; a number and Enter on the stage moves both.
  await notes.keyboard.press('ArrowRight');
  await waitData(stage, 'stage', 'playing');
  check(true, 'Next on the notes page plays the beat on the stage');
  await stage.keyboard.press('5');
  await stage.keyboard.press('Enter');
  await waitData(stage, 'beat', '5');
  await waitData(notes, 'beat', '5');
  check(true, 'beat 5 chosen on the stage shows on the notes page');
  await notes.keyboard.press('End');
  await waitData(stage, 'beat', '8');
  check(true, 'End on the notes page takes the stage to the last beat');
  await notes.keyboard.press('ArrowLeft');
  await waitData(stage, 'beat', '7');
  await waitData(notes, 'beat', '7');
  check(true, 'Previous on the notes page goes back a beat on both');
  // B on the notes blanks the stage, and the notes say so; B again shows it.
  await notes.keyboard.press('b');
  await waitData(stage, 'blank', 'black');
  check(await canvasData(notes, 'blank') === 'black', 'the notes page knows the stage is black');
  await notes.screenshot({ path: `${outDir}/notes.png` });
  await notes.keyboard.press('b');
  await waitData(stage, 'blank', 'shown');
  check(true, 'B on the notes page blanks the stage and shows it again');
  for (const page of [stage, notes]) {
    check(page.errors.length === 0, `no page errors (${page.errors.join('; ')})`);
  }
  await context.close();
}

/** The model's run alone in a report=1 page: the time to a report of `until` ms of `scenario`,
 * less the time to one of 1 ms (loading the page and the module, building the cluster). */
async function reportMs(browser, base, scenario, until) {
  const page = await newPage(browser);
  await page.goto(`${base}/?report=1&scenario=${scenario}&until_ms=${until}`);
  await page.waitForSelector('#report:not([hidden])', { timeout: FRAME_TIMEOUT });
  const ms = await page.evaluate(() => performance.now());
  if (page.errors.length) throw new Error(page.errors.join('; '));
  await page.context().close();
  return ms;
}

/** The same for the native command line: `run SCENARIO --until-ms UNTIL`, less a 1 ms run. */
function nativeMs(native, scenario, until) {
  const time = (ms) => {
    const started = process.hrtime.bigint();
    execFileSync(native, ['run', scenario, '--until-ms', String(ms)], { maxBuffer: 1 << 28 });
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  return time(until) - time(1);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function modelSpeed(browser, base, native, runs) {
  const [scenario, until] = ['throughput', 60_000];
  const web = [];
  for (let i = 0; i < runs; i++) {
    web.push(await reportMs(browser, base, scenario, until) - await reportMs(browser, base, scenario, 1));
  }
  const speed = (ms) => (until / ms).toFixed(0);
  let line = `model in the page: ${speed(median(web))} simulated s per wall s (${scenario}, ${until / 1000} s, median of ${runs})`;
  if (native) {
    const own = median(Array.from({ length: runs }, () => nativeMs(native, scenario, until)));
    line += `; native ${speed(own)}, so the page runs at ${(own / median(web) * 100).toFixed(0)}% of native`;
  }
  console.log(line);
}

async function bench(base, runs, native) {
  const browser = await launch();
  const times = [];
  try {
    for (let i = 0; i < runs; i++) {
      const page = await newPage(browser);
      await page.goto(`${base}/`);
      await waitFrames(page, 1);
      times.push(await page.evaluate(() => performance.now()));
      if (page.errors.length) throw new Error(page.errors.join('; '));
      await page.context().close();
    }
    times.sort((a, b) => a - b);
    const ms = times.map((t) => t.toFixed(0)).join(', ');
    console.log(`first frame: ${(times[Math.floor(times.length / 2)] / 1000).toFixed(1)} s median over ${runs} loads (${ms} ms)`);
    await modelSpeed(browser, base, native, runs);
  } finally {
    await browser.close();
  }
}

try {
  if (mode === 'test' && base && rest.length === 2) {
    await test(base, rest[0], rest[1]);
  } else if (mode === 'bench' && base) {
    await bench(base, Number(rest[0] ?? 3), rest[1]);
  } else {
    console.error('usage: node browser.mjs test BASE_URL NATIVE_BINARY OUT_DIR | bench BASE_URL [RUNS] [NATIVE_BINARY]');
    process.exit(2);
  }
} catch (e) {
  console.error(`FAILED: ${e.message}`);
  process.exit(1);
}
