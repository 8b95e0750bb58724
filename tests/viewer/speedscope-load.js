// Loads profiles in speedscope (its own release build, from npm) in headless Chromium and checks that
// speedscope's importer took each one: no import error or alert, and every expected frame name shown
// in its sandwich view's table of some profile (DOM text, so the names are what speedscope parsed from our file).
//   node speedscope-load.js SPEEDSCOPE_RELEASE_DIR PROFILE:NAME1,NAME2,... [PROFILE:...]
//   node speedscope-load.js --screenshot PNG VIEW SPEEDSCOPE_RELEASE_DIR PROFILE
// One line per profile: "ok PROFILE: N frames found (speedscope profile 'P')" or "FAIL PROFILE: why";
// exits 1 if any failed. CHROMIUM names the browser (default /usr/bin/chromium).
'use strict';
const http = require('http');
const fs = require('fs');
const path = require('path');
const puppeteer = require('puppeteer-core');

const TYPES = {'.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css',
	       '.wasm': 'application/wasm', '.png': 'image/png', '.json': 'application/json'};

// Serves the speedscope release directory, and /profile/N as the N-th profile file.
function serve(root, profiles) {
	const server = http.createServer((req, res) => {
		const url = decodeURIComponent(req.url.split('?')[0].split('#')[0]);
		let file;
		const m = /^\/profile\/(\d+)\//.exec(url);
		if (m)
			file = profiles[+m[1]];
		else
			file = path.join(root, path.normalize(url === '/' ? '/index.html' : url));
		fs.readFile(file, (err, data) => {
			if (err) {
				res.writeHead(404);
				res.end();
				return;
			}
			res.writeHead(200, {'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream'});
			res.end(data);
		});
	});
	return new Promise(ok => server.listen(0, '127.0.0.1', () => ok(server)));
}

async function open(browser, port, i, file, view) {
	const page = await browser.newPage();
	const problems = [];
	page.on('dialog', async d => { problems.push('alert: ' + d.message()); await d.dismiss(); });
	page.on('pageerror', e => problems.push('page error: ' + e.message));
	page.on('console', m => { if (/Failed to load format|error/i.test(m.text())) problems.push('console: ' + m.text()); });
	await page.setViewport({width: 1400, height: 700});
	const name = encodeURIComponent(path.basename(file));
	await page.goto(`http://127.0.0.1:${port}/index.html#profileURL=/profile/${i}/${name}&view=${view}`,
			{waitUntil: 'networkidle0'});
	return {page, problems};
}

// Text of the page once speedscope shows its views (or an error / alert), within 20 s.
async function settle(page, problems) {
	for (let t = 0; t < 200 && !problems.length; t++) {
		const text = await page.evaluate(() => document.body.innerText);
		if (/Left Heavy/.test(text) && !/Loading/.test(text))
			return text;
		await new Promise(r => setTimeout(r, 100));
	}
	return problems.length ? '' : null;
}

async function main() {
	const args = process.argv.slice(2);
	let shot = null;
	if (args[0] === '--screenshot')
		shot = {png: args[1], view: args[2]}, args.splice(0, 3);
	const root = args[0];
	const specs = args.slice(1).map(a => {
		const k = a.lastIndexOf(':');
		return shot ? {file: a, names: []} : {file: a.slice(0, k), names: a.slice(k + 1).split(',')};
	});
	const server = await serve(root, specs.map(s => s.file));
	const port = server.address().port;
	const browser = await puppeteer.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--use-gl=swiftshader', '--enable-unsafe-swiftshader'],
	});
	let failed = 0;
	try {
		for (let i = 0; i < specs.length; i++) {
			const s = specs[i];
			const {page, problems} = await open(browser, port, i, s.file, shot ? shot.view : 'sandwich');
			const text = await settle(page, problems);
			const fail = why => { failed++; console.log(`FAIL ${s.file}: ${why}`); };
			if (problems.length) {
				fail(problems.join('; '));
			} else if (text === null) {
				fail('speedscope showed no profile within 20 s');
			} else if (shot) {
				await new Promise(r => setTimeout(r, 500));
				await page.screenshot({path: shot.png});
				console.log(`ok ${s.file}: ${shot.view} view in ${shot.png}`);
			} else {
				// every profile (one per thread of a JSON trace): 'n' shows the next one
				let all = text, last = text, profiles = 1;
				for (let k = 0; k < 256; k++) {
					await page.keyboard.press('n');
					await new Promise(r => setTimeout(r, 100));
					const t = await page.evaluate(() => document.body.innerText);
					if (t === last)
						break;
					all += t;
					last = t;
					profiles++;
				}
				const missing = s.names.filter(n => !all.includes(n));
				const title = await page.title();
				if (missing.length)
					fail(`frames not in speedscope's table: ${missing.join(', ')}`);
				else
					console.log(`ok ${s.file}: ${s.names.length} frames found in ${profiles} profile(s) (speedscope: '${title}')`);
			}
			await page.close();
		}
	} finally {
		await browser.close();
		server.close();
	}
	process.exit(failed ? 1 : 0);
}

main().catch(e => { console.log('FAIL: ' + e.message); process.exit(1); });
