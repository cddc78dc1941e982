// Serves the checkout over HTTP for the demo page: `npm run serve`, then open
// http://localhost:8080/www/ (wasm cannot be fetched from file:// URLs).
import {serveCheckout} from './browser.js';

const port = Number(process.env.PORT ?? 8080);
await serveCheckout(port);
console.log(`serving http://localhost:${port}/www/`);
